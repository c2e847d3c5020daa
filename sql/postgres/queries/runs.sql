-- name: RunGet :one
SELECT * FROM faucet_runs WHERE run_id = @run_id;

-- name: RunStatus :one
SELECT status FROM faucet_runs WHERE run_id = @run_id;

-- name: RunList :many
-- One page, newest first. The cursor run's (submitted_at, run_id) bounds the
-- page from above through a row comparison the index answers; no cursor
-- compares against +infinity and so starts from the top, while a cursor that
-- names no run compares against NULL and selects nothing (the store then
-- tells it apart from a last page).
SELECT * FROM faucet_runs r
WHERE (cardinality(@statuses::text[]) = 0 OR r.status = ANY (@statuses::text[]))
  AND (sqlc.narg(name)::text IS NULL OR r.name = sqlc.narg(name)::text)
  AND (sqlc.narg(since)::timestamptz IS NULL OR r.submitted_at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR r.submitted_at <= sqlc.narg(until)::timestamptz)
  AND (r.submitted_at, r.run_id) < (
      CASE WHEN @cursor::text = '' THEN 'infinity'::timestamptz
           ELSE (SELECT c.submitted_at FROM faucet_runs c WHERE c.run_id = @cursor::text) END,
      COALESCE((SELECT c.run_id FROM faucet_runs c WHERE c.run_id = @cursor::text), '')
  )
ORDER BY r.submitted_at DESC, r.run_id DESC
LIMIT @page_limit;

-- name: RunDelete :one
-- Deletes a terminal run together with its idempotency claims, shards and
-- logs, in one statement; returns how many runs it deleted (0 or 1).
WITH gone AS (
    DELETE FROM faucet_runs r
    WHERE r.run_id = @run_id AND r.status IN ('completed', 'failed', 'cancelled')
    RETURNING r.run_id
), claims AS (
    DELETE FROM faucet_idempotency_claims c WHERE c.run_id IN (SELECT g.run_id FROM gone g)
), shards AS (
    DELETE FROM faucet_shards s WHERE s.run_id IN (SELECT g.run_id FROM gone g)
), logs AS (
    DELETE FROM faucet_run_logs l WHERE l.run_id IN (SELECT g.run_id FROM gone g)
), marks AS (
    DELETE FROM faucet_run_log_truncations t WHERE t.run_id IN (SELECT g.run_id FROM gone g)
)
SELECT count(*) FROM gone;

-- name: RunPurge :one
-- Deletes terminal runs finished before the cutoff with their shards and
-- logs; returns the runs and shards removed.
WITH gone AS (
    DELETE FROM faucet_runs r
    WHERE r.status IN ('completed', 'failed', 'cancelled') AND r.finished_at < @before::timestamptz
    RETURNING r.run_id
), shards AS (
    DELETE FROM faucet_shards s WHERE s.run_id IN (SELECT g.run_id FROM gone g) RETURNING 1
), logs AS (
    DELETE FROM faucet_run_logs l WHERE l.run_id IN (SELECT g.run_id FROM gone g)
), marks AS (
    DELETE FROM faucet_run_log_truncations t WHERE t.run_id IN (SELECT g.run_id FROM gone g)
)
SELECT (SELECT count(*) FROM gone) AS runs, (SELECT count(*) FROM shards) AS shards;

-- name: RunRenewLeases :execrows
UPDATE faucet_runs SET lease_expires_at = @lease_expires_at::timestamptz
WHERE owner = @owner::text AND status IN ('pending', 'queued', 'running', 'sharded');

-- name: RunRecoverOrphans :execrows
-- Fails queued and running runs whose owner's lease lapsed.
UPDATE faucet_runs SET
    status = 'failed',
    finished_at = @now::timestamptz,
    error = @error::text,
    owner = NULL,
    lease_expires_at = NULL,
    record = record || jsonb_build_object(
        'status', 'failed',
        'finished_at', @now::timestamptz,
        'error', @error::text,
        'elapsed_secs', COALESCE(NULLIF(record -> 'elapsed_secs', 'null'::jsonb),
                                 to_jsonb(date_part('epoch', sqlc.arg(now)::timestamptz - started_at))))
WHERE status IN ('queued', 'running')
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz);

-- name: RunClaimPending :many
-- Claims the oldest pending runs in one statement: rows another claimer holds
-- are skipped, so concurrent claimers never return the same run. The picked
-- ids reach the UPDATE as an array, so even a generic plan finds them through
-- the primary key.
WITH picked AS (
    SELECT p.run_id FROM faucet_runs p
    WHERE p.status = 'pending'
    ORDER BY p.submitted_at, p.run_id
    LIMIT @claim_limit
    FOR UPDATE SKIP LOCKED
)
UPDATE faucet_runs r SET
    status = 'running',
    started_at = @now::timestamptz,
    owner = @owner::text,
    lease_expires_at = @lease_expires_at::timestamptz,
    record = r.record || jsonb_build_object('status', 'running', 'started_at', @now::timestamptz)
WHERE r.run_id = ANY (ARRAY(SELECT picked.run_id FROM picked)) AND r.status = 'pending'
RETURNING r.*;

-- name: RunReclaimPoison :execrows
-- Fails running runs whose lease lapsed and whose attempts reached the cap.
-- error_format gets the row's attempt+1 and attempt (db.PoisonErrorFormat).
UPDATE faucet_runs SET
    status = 'failed',
    finished_at = @now::timestamptz,
    error = format(@error_format::text, attempt + 1, attempt),
    owner = NULL,
    lease_expires_at = NULL,
    record = record || jsonb_build_object(
        'status', 'failed',
        'finished_at', @now::timestamptz,
        'error', format(@error_format::text, attempt + 1, attempt),
        'elapsed_secs', COALESCE(NULLIF(record -> 'elapsed_secs', 'null'::jsonb),
                                 to_jsonb(date_part('epoch', sqlc.arg(now)::timestamptz - started_at))))
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz)
  AND attempt >= @max_attempts::integer;

-- name: RunReclaimRequeue :execrows
-- Puts running runs whose lease lapsed back to pending for any instance to
-- claim, counting the attempt. cancel_requested_at survives.
UPDATE faucet_runs SET
    status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1,
    record = record || jsonb_build_object('status', 'pending', 'attempt', attempt + 1)
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz)
  AND attempt < @max_attempts::integer;

-- name: RunFinalizeOwned :execrows
-- Writes a terminal record only while the caller owns the run and it is not
-- yet terminal: the first finalizer wins, a reclaimed run is not overwritten.
UPDATE faucet_runs SET
    name = @name,
    labels = @labels,
    status = @status,
    submitted_at = @submitted_at,
    started_at = @started_at,
    finished_at = @finished_at,
    idempotency_key = @idempotency_key,
    lease_expires_at = NULL,
    attempt = @attempt,
    records_written = @records_written,
    error = sqlc.narg(error)::text,
    record = @record
WHERE run_id = @run_id
  AND owner = @owner::text
  AND status NOT IN ('completed', 'failed', 'cancelled');

-- name: RunFinalizeShardedParent :execrows
-- Finalizes a sharded run, fenced on its status; owner and lease stay as they
-- are. records_written becomes the sum over its shards.
UPDATE faucet_runs r SET
    status = @status,
    finished_at = @finished_at::timestamptz,
    error = sqlc.narg(error)::text,
    records_written = agg.total,
    record = r.record || jsonb_build_object(
        'status', @status::text,
        'finished_at', @finished_at::timestamptz,
        'error', sqlc.narg(error)::text,
        'records_written', agg.total,
        'elapsed_secs', COALESCE(NULLIF(r.record -> 'elapsed_secs', 'null'::jsonb),
                                 to_jsonb(date_part('epoch', sqlc.arg(finished_at)::timestamptz - r.started_at))))
FROM (
    SELECT COALESCE(sum(s.records_written), 0)::bigint AS total
    FROM faucet_shards s WHERE s.run_id = @run_id
) agg
WHERE r.run_id = @run_id AND r.status = 'sharded';

-- name: RunCancelPending :execrows
UPDATE faucet_runs SET
    status = 'cancelled',
    finished_at = @now::timestamptz,
    lease_expires_at = NULL,
    record = record || jsonb_build_object('status', 'cancelled', 'finished_at', @now::timestamptz)
WHERE run_id = @run_id AND status = 'pending';

-- name: RunRequestCancel :one
-- Flags a running or sharded run for cancellation, keeping the first request,
-- and cancels the pending shards of a sharded run in the same statement.
-- Returns how many runs it flagged (0 or 1).
WITH flagged AS (
    UPDATE faucet_runs r SET cancel_requested_at = COALESCE(r.cancel_requested_at, @now::timestamptz)
    WHERE r.run_id = @run_id AND r.status IN ('running', 'sharded')
    RETURNING r.run_id, r.status
), shards AS (
    UPDATE faucet_shards s SET
        status = 'cancelled',
        finished_at = @now::timestamptz,
        error = 'run cancelled before the shard started'
    FROM flagged f
    WHERE s.run_id = f.run_id AND f.status = 'sharded' AND s.status = 'pending'
)
SELECT count(*) FROM flagged;

-- name: RunPendingCancellations :many
SELECT run_id FROM faucet_runs
WHERE owner = @owner::text AND status = 'running' AND cancel_requested_at IS NOT NULL
ORDER BY run_id;

-- name: RunStart :execrows
UPDATE faucet_runs SET
    status = 'running',
    started_at = @started_at::timestamptz,
    lease_expires_at = @lease_expires_at::timestamptz,
    record = record || jsonb_build_object('status', 'running', 'started_at', @started_at::timestamptz)
WHERE run_id = @run_id AND owner = @owner::text AND status = 'queued';

-- name: RunWrite :one
-- Inserts or replaces a run, stamping the caller as owner with the given
-- lease (cancel_requested_at is deliberately left alone), together with an
-- audit entry (when audit_id is set) and log lines, in one statement. With
-- fenced, only an existing run is written, and only while the caller owns it
-- and it is not terminal, like RunFinalizeOwned: the first finalizer wins and
-- a reclaimed run is not overwritten. The entry and the lines are stored
-- either way. Returns 1 when the run was written.
WITH run AS (
    INSERT INTO faucet_runs AS f (
        run_id, name, labels, status, submitted_at, started_at, finished_at, idempotency_key,
        owner, lease_expires_at, attempt, records_written, error, record
    )
    SELECT @run_id, @name, @labels, @status, @submitted_at, @started_at, @finished_at, @idempotency_key,
        @owner::text, sqlc.narg(lease_expires_at)::timestamptz, @attempt, @records_written, @error, @record
    WHERE NOT @fenced::boolean OR EXISTS (SELECT 1 FROM faucet_runs e WHERE e.run_id = @run_id)
    ON CONFLICT (run_id) DO UPDATE SET
        name = excluded.name,
        labels = excluded.labels,
        status = excluded.status,
        submitted_at = excluded.submitted_at,
        started_at = excluded.started_at,
        finished_at = excluded.finished_at,
        idempotency_key = excluded.idempotency_key,
        owner = excluded.owner,
        lease_expires_at = excluded.lease_expires_at,
        attempt = excluded.attempt,
        records_written = excluded.records_written,
        error = excluded.error,
        record = excluded.record
    WHERE NOT @fenced::boolean
       OR (f.owner = excluded.owner AND f.status NOT IN ('completed', 'failed', 'cancelled'))
    RETURNING 1
), audit AS (
    INSERT INTO faucet_audit (id, ts, principal, role, action, run_id, config_fingerprint, source_ip, result)
    SELECT sqlc.narg(audit_id)::text, @audit_ts::timestamptz, @audit_principal::text, @audit_role::text,
        @audit_action::text, @run_id, sqlc.narg(audit_config_fingerprint)::text,
        sqlc.narg(audit_source_ip)::text, @audit_result::text
    WHERE sqlc.narg(audit_id)::text IS NOT NULL
), lines AS (
    INSERT INTO faucet_run_logs (run_id, seq, ts, level, line)
    SELECT @run_id, unnest(@seqs::bigint[]), unnest(@tss::timestamptz[]), unnest(@levels::text[]), unnest(@lines::text[])
    ON CONFLICT (run_id, seq) DO NOTHING
)
SELECT count(*) FROM run;

-- name: RunShard :one
-- Turns a running run the caller owns (or one it already sharded, so a
-- repeated call completes the set) into a sharded run and inserts its shards
-- from a JSON array of {shard_id, descriptor, size_estimate}, in one
-- statement: the shards are inserted only when the fence let the run through,
-- and inserted cancelled when the run already carries a cancel request (no
-- claimer would ever take them).
WITH marked AS (
    UPDATE faucet_runs r SET
        status = 'sharded',
        record = r.record || jsonb_build_object('status', 'sharded')
    WHERE r.run_id = @run_id AND r.owner = @owner::text AND r.status IN ('running', 'sharded')
    RETURNING r.run_id, r.cancel_requested_at
), inserted AS (
    INSERT INTO faucet_shards (run_id, shard_id, descriptor, size_estimate, status, finished_at, error)
    SELECT m.run_id, s.shard_id, s.descriptor, s.size_estimate,
        CASE WHEN m.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END,
        CASE WHEN m.cancel_requested_at IS NULL THEN NULL ELSE @now::timestamptz END,
        CASE WHEN m.cancel_requested_at IS NULL THEN NULL ELSE 'run cancelled before the shard started' END
    FROM marked m, jsonb_to_recordset(@shards::jsonb) AS s(shard_id text, descriptor jsonb, size_estimate bigint)
    ON CONFLICT (run_id, shard_id) DO NOTHING
)
SELECT count(*) FROM marked;

-- name: RunSetProgress :execrows
-- Records the live counts of running runs the caller owns, given as
-- parallel arrays.
UPDATE faucet_runs r SET
    records_written = p.records,
    record = r.record || jsonb_build_object('records_written', p.records)
FROM (SELECT unnest(@run_ids::text[]) AS run_id, unnest(@records::bigint[]) AS records) p
WHERE r.run_id = p.run_id AND r.owner = @owner::text AND r.status = 'running';

-- name: RunRelease :execrows
-- Hands a running run the caller owns back to pending for any instance.
UPDATE faucet_runs SET
    status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1,
    record = record || jsonb_build_object('status', 'pending', 'attempt', attempt + 1)
WHERE run_id = @run_id AND owner = @owner::text AND status = 'running';
