-- Run history: runs, idempotency claims, cluster membership, source shards,
-- the audit log and persisted run logs.

-- +goose Up

-- One row per run. The columns carry every field a query filters, orders or
-- fences on, and are authoritative when a run is read; record holds the whole
-- run document, kept in step by every statement that changes a column.
CREATE TABLE faucet_runs (
    run_id              text        PRIMARY KEY,
    name                text,
    labels              jsonb       NOT NULL DEFAULT '{}',
    status              text        NOT NULL
        CHECK (status IN ('pending', 'queued', 'running', 'sharded', 'completed', 'failed', 'cancelled')),
    submitted_at        timestamptz NOT NULL,
    started_at          timestamptz,
    finished_at         timestamptz,
    idempotency_key     text,
    -- The instance that owns the run and the instant its ownership lapses
    -- unless renewed; together they fence recovery, reclaim and finalize.
    owner               text,
    lease_expires_at    timestamptz,
    cancel_requested_at timestamptz,
    attempt             integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    records_written     bigint      NOT NULL DEFAULT 0,
    error               text,
    record              jsonb       NOT NULL
);

-- Listing: newest first, keyset-paginated on (submitted_at, run_id).
CREATE INDEX faucet_runs_submitted_idx ON faucet_runs (submitted_at, run_id);
CREATE INDEX faucet_runs_status_submitted_idx ON faucet_runs (status, submitted_at, run_id);
CREATE INDEX faucet_runs_name_submitted_idx ON faucet_runs (name, submitted_at, run_id) WHERE name IS NOT NULL;
-- Claiming: the oldest pending runs.
CREATE INDEX faucet_runs_pending_idx ON faucet_runs (submitted_at, run_id) WHERE status = 'pending';
-- Lease scans of recovery and reclaim.
CREATE INDEX faucet_runs_lease_idx ON faucet_runs (lease_expires_at) WHERE status IN ('queued', 'running');
-- Lease renewal and cancellation polling by the owning instance.
CREATE INDEX faucet_runs_owner_idx ON faucet_runs (owner)
    WHERE status IN ('pending', 'queued', 'running', 'sharded');
-- The sweep over sharded parents.
CREATE INDEX faucet_runs_sharded_idx ON faucet_runs (run_id) WHERE status = 'sharded';
-- Retention.
CREATE INDEX faucet_runs_finished_idx ON faucet_runs (finished_at)
    WHERE status IN ('completed', 'failed', 'cancelled');

-- Idempotency keys: the primary key makes the first claim atomic.
CREATE TABLE faucet_idempotency_claims (
    key         text        PRIMARY KEY,
    run_id      text        NOT NULL,
    fingerprint text        NOT NULL,
    claimed_at  timestamptz NOT NULL
);
CREATE INDEX faucet_idempotency_claims_run_idx ON faucet_idempotency_claims (run_id);
CREATE INDEX faucet_idempotency_claims_claimed_idx ON faucet_idempotency_claims (claimed_at);

-- Cluster membership, one heartbeated row per serve instance.
CREATE TABLE faucet_instances (
    instance_id    text        PRIMARY KEY,
    started_at     timestamptz NOT NULL,
    last_heartbeat timestamptz NOT NULL,
    listen         text        NOT NULL DEFAULT '',
    max_concurrent integer     NOT NULL DEFAULT 0,
    in_flight      integer     NOT NULL DEFAULT 0,
    -- The newest run-state format the instance reads.
    state_format   integer     NOT NULL DEFAULT 0
);
CREATE INDEX faucet_instances_heartbeat_idx ON faucet_instances (last_heartbeat);

-- Source shards of sharded runs, each claimed and leased on its own.
CREATE TABLE faucet_shards (
    run_id           text        NOT NULL,
    shard_id         text        NOT NULL,
    descriptor       jsonb       NOT NULL,
    size_estimate    bigint,
    status           text        NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'completed', 'failed', 'cancelled')),
    owner            text,
    lease_expires_at timestamptz,
    attempt          integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    records_written  bigint      NOT NULL DEFAULT 0,
    error            text,
    finished_at      timestamptz,
    PRIMARY KEY (run_id, shard_id)
);
-- Claiming: largest estimated size first, unknown sizes last.
CREATE INDEX faucet_shards_pending_idx ON faucet_shards (size_estimate DESC NULLS LAST, run_id, shard_id)
    WHERE status = 'pending';
CREATE INDEX faucet_shards_lease_idx ON faucet_shards (lease_expires_at) WHERE status = 'running';
CREATE INDEX faucet_shards_owner_idx ON faucet_shards (owner) WHERE status = 'running';

-- Control-plane actions and denials, newest first.
CREATE TABLE faucet_audit (
    id                 text        PRIMARY KEY,
    ts                 timestamptz NOT NULL,
    principal          text        NOT NULL,
    role               text        NOT NULL,
    action             text        NOT NULL,
    run_id             text,
    config_fingerprint text,
    source_ip          text,
    result             text        NOT NULL
);
CREATE INDEX faucet_audit_ts_idx ON faucet_audit (ts, id);
CREATE INDEX faucet_audit_principal_idx ON faucet_audit (principal, ts, id);
CREATE INDEX faucet_audit_action_idx ON faucet_audit (action, ts, id);

-- Persisted, already redacted log lines of runs, paginated by seq.
CREATE TABLE faucet_run_logs (
    run_id text        NOT NULL,
    seq    bigint      NOT NULL,
    ts     timestamptz NOT NULL,
    level  text        NOT NULL,
    line   text        NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX faucet_run_logs_ts_idx ON faucet_run_logs (ts);

-- Runs whose oldest log lines were dropped by the per-run cap.
CREATE TABLE faucet_run_log_truncations (
    run_id       text        PRIMARY KEY,
    truncated_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE faucet_run_log_truncations;
DROP TABLE faucet_run_logs;
DROP TABLE faucet_audit;
DROP TABLE faucet_shards;
DROP TABLE faucet_instances;
DROP TABLE faucet_idempotency_claims;
DROP TABLE faucet_runs;
