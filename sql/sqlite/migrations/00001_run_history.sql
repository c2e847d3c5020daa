-- The run-history core of faucet's SQLite dialect.
--
-- Conventions: timestamps are INTEGER microseconds since the Unix epoch (UTC),
-- so they compare and sort natively and round-trip exactly like Postgres'
-- microsecond timestamptz; JSON documents are TEXT checked with json_valid.
-- Tables are STRICT so a value of the wrong type is an error, not a silent
-- conversion.

-- +goose Up
CREATE TABLE faucet_runs (
    run_id              TEXT    NOT NULL PRIMARY KEY,
    name                TEXT,
    labels              TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(labels)),
    status              TEXT    NOT NULL CHECK (status IN ('pending', 'queued', 'running', 'sharded', 'completed', 'failed', 'cancelled')),
    submitted_at        INTEGER NOT NULL,
    started_at          INTEGER,
    finished_at         INTEGER,
    idempotency_key     TEXT,
    -- owner and lease_expires_at fence cluster work: only the owner may
    -- finalize, and peers reclaim a run once its lease has expired.
    owner               TEXT,
    lease_expires_at    INTEGER,
    cancel_requested_at INTEGER,
    attempt             INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    records_written     INTEGER NOT NULL DEFAULT 0,
    error               TEXT,
    -- The whole RunRecord as JSON. The columns above are authoritative for
    -- the fields they carry; statements that change them keep this in step.
    record              TEXT    NOT NULL CHECK (json_valid(record))
) STRICT;

-- Newest-first listing, its keyset cursor and the time-window filters. A
-- page walks it from the cursor down and stops after one row past the page,
-- whatever the status and name filters; an index per filter would go unused,
-- since one statement with optional filters cannot choose one.
CREATE INDEX faucet_runs_submitted_idx ON faucet_runs (submitted_at, run_id);
-- Every scan of the few runs in one active status: the oldest pending runs to
-- claim, the running runs whose lease may have expired, the sharded runs
-- whose shards may all be done.
CREATE INDEX faucet_runs_status_submitted_idx ON faucet_runs (status, submitted_at, run_id);
-- Lease renewal by the owning instance.
CREATE INDEX faucet_runs_owner_idx ON faucet_runs (owner) WHERE status IN ('pending', 'queued', 'running', 'sharded');
-- Cross-instance cancellation requests an owner must act on.
CREATE INDEX faucet_runs_cancel_idx ON faucet_runs (owner) WHERE cancel_requested_at IS NOT NULL;
-- Retention: terminal runs by finish time (the purge statements name it with
-- INDEXED BY, since without statistics SQLite would rather scan by status).
CREATE INDEX faucet_runs_finished_idx ON faucet_runs (finished_at) WHERE status IN ('completed', 'failed', 'cancelled');

-- One row per idempotency key; the primary key makes a first claim atomic.
CREATE TABLE faucet_idempotency_claims (
    key         TEXT    NOT NULL PRIMARY KEY,
    run_id      TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    claimed_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX faucet_idempotency_claims_run_idx ON faucet_idempotency_claims (run_id);
CREATE INDEX faucet_idempotency_claims_claimed_idx ON faucet_idempotency_claims (claimed_at);

-- Cluster membership, one row per serve instance, upserted on every heartbeat.
CREATE TABLE faucet_instances (
    instance_id    TEXT    NOT NULL PRIMARY KEY,
    started_at     INTEGER NOT NULL,
    last_heartbeat INTEGER NOT NULL,
    listen         TEXT    NOT NULL DEFAULT '',
    max_concurrent INTEGER NOT NULL DEFAULT 0,
    in_flight      INTEGER NOT NULL DEFAULT 0,
    state_format   INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX faucet_instances_heartbeat_idx ON faucet_instances (last_heartbeat);

-- Source shards of sharded runs, each claimed and leased on its own.
CREATE TABLE faucet_shards (
    run_id           TEXT    NOT NULL,
    shard_id         TEXT    NOT NULL,
    descriptor       TEXT    NOT NULL CHECK (json_valid(descriptor)),
    size_estimate    INTEGER,
    status           TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
    owner            TEXT,
    lease_expires_at INTEGER,
    attempt          INTEGER NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    records_written  INTEGER NOT NULL DEFAULT 0,
    error            TEXT,
    finished_at      INTEGER,
    PRIMARY KEY (run_id, shard_id)
) STRICT;

-- Shard claim: largest estimate first (SQLite sorts NULL lowest, so unknown
-- sizes come last in descending order).
CREATE INDEX faucet_shards_pending_idx ON faucet_shards (size_estimate DESC, run_id, shard_id) WHERE status = 'pending';
-- Shard reclaim by lease expiry, renewal and cancellation by owner.
CREATE INDEX faucet_shards_lease_idx ON faucet_shards (lease_expires_at) WHERE status = 'running';
CREATE INDEX faucet_shards_owner_idx ON faucet_shards (owner) WHERE status = 'running';

-- Control-plane audit log; id is a time-ordered UUIDv7.
CREATE TABLE faucet_audit (
    id                 TEXT    NOT NULL PRIMARY KEY,
    ts                 INTEGER NOT NULL,
    principal          TEXT    NOT NULL,
    role               TEXT    NOT NULL,
    action             TEXT    NOT NULL,
    run_id             TEXT,
    config_fingerprint TEXT,
    source_ip          TEXT,
    result             TEXT    NOT NULL
) STRICT;

-- Newest-first listing (its principal and action filters ride along, as the
-- run listing's do) and retention.
CREATE INDEX faucet_audit_ts_idx ON faucet_audit (ts, id);

-- Persisted, already redacted run log lines, paginated by sequence number.
CREATE TABLE faucet_run_logs (
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    ts     INTEGER NOT NULL,
    level  TEXT    NOT NULL,
    line   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE INDEX faucet_run_logs_ts_idx ON faucet_run_logs (ts);

-- A row here marks a run whose oldest log lines were dropped by the per-run cap.
CREATE TABLE faucet_run_log_truncations (
    run_id       TEXT    NOT NULL PRIMARY KEY,
    truncated_at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE faucet_run_log_truncations;
DROP TABLE faucet_run_logs;
DROP TABLE faucet_audit;
DROP TABLE faucet_shards;
DROP TABLE faucet_instances;
DROP TABLE faucet_idempotency_claims;
DROP TABLE faucet_runs;
