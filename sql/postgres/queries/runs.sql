-- name: RunGet :one
SELECT * FROM faucet_runs WHERE run_id = @run_id;

-- name: RunStatus :one
SELECT status FROM faucet_runs WHERE run_id = @run_id;

-- name: RunList :many
-- One page, newest first. The cursor run's (submitted_at, run_id) bounds the
-- page from above through a row comparison the index answers; no cursor
-- compares against +infinity, and a cursor naming no run against NULL, which
-- no row passes.
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

-- name: RunListTemplate :many
-- RunList for the runs of one template, read newest first through the
-- template index rather than found in a walk of the whole history.
SELECT * FROM faucet_runs r
WHERE r.template_id = @template::text
  AND (cardinality(@statuses::text[]) = 0 OR r.status = ANY (@statuses::text[]))
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

-- name: RunInsert :exec
-- Inserts a new run owned by the caller and, when audit_id is set, the audit
-- entry of its submission, in one statement.
WITH run AS (
    INSERT INTO faucet_runs (
        run_id, name, labels, status, submitted_at, started_at, finished_at, idempotency_key,
        owner, lease_expires_at, attempt, records_written, error, submission, invocations,
        template_id, template_version
    ) VALUES (
        @run_id, @name, @labels, @status, @submitted_at, @started_at, @finished_at, @idempotency_key,
        @owner::text, @lease_expires_at::timestamptz, @attempt, @records_written, @error, @submission, @invocations,
        @template_id, @template_version
    )
    RETURNING run_id
)
INSERT INTO faucet_audit (id, ts, principal, role, action, run_id, config_fingerprint, source_ip, result)
SELECT sqlc.narg(audit_id)::text, @audit_ts::timestamptz, @audit_principal::text, @audit_role::text,
    @audit_action::text, run.run_id, sqlc.narg(audit_config_fingerprint)::text,
    sqlc.narg(audit_source_ip)::text, @audit_result::text
FROM run
WHERE sqlc.narg(audit_id)::text IS NOT NULL;

-- name: RunFinish :one
-- Writes a run's terminal columns, inserting the whole run when the store
-- lacks it, together with its log lines and the ledger entries of the files
-- it wrote (one per path: a later write of a path moves its live entry on,
-- as LocalOutputUpsert does), in one statement; the submission of a stored
-- run is never rewritten. Returns 1.
WITH run AS (
    INSERT INTO faucet_runs AS f (
        run_id, name, labels, status, submitted_at, started_at, finished_at, idempotency_key,
        owner, lease_expires_at, attempt, records_written, error, submission, invocations,
        template_id, template_version
    ) VALUES (
        @run_id, @name, @labels, @status, @submitted_at, @started_at, @finished_at, @idempotency_key,
        @owner::text, NULL, @attempt, @records_written, @error, @submission, @invocations,
        @template_id, @template_version
    )
    ON CONFLICT (run_id) DO UPDATE SET
        status = excluded.status,
        started_at = excluded.started_at,
        finished_at = excluded.finished_at,
        records_written = excluded.records_written,
        error = excluded.error,
        invocations = excluded.invocations,
        owner = excluded.owner,
        lease_expires_at = NULL
    RETURNING 1
), lines AS (
    INSERT INTO faucet_run_logs (run_id, seq, ts, level, line)
    SELECT @run_id, unnest(@seqs::bigint[]), unnest(@tss::timestamptz[]), unnest(@levels::text[]), unnest(@lines::text[])
    ON CONFLICT (run_id, seq) DO NOTHING
), outputs AS (
    INSERT INTO faucet_local_outputs AS o (id, path, size_bytes, run_id, first_run_id, first_written_at, last_written_at, existed_before, file_id)
    SELECT w.id, w.path, w.size_bytes, w.run_id, w.run_id, w.first_written_at, w.last_written_at, w.existed_before, NULLIF(w.file_id, '')
    FROM (
        SELECT unnest(@output_ids::text[]) AS id, unnest(@output_paths::text[]) AS path,
               unnest(@output_sizes::bigint[]) AS size_bytes, unnest(@output_run_ids::text[]) AS run_id,
               unnest(@output_first_at::timestamptz[]) AS first_written_at, unnest(@output_last_at::timestamptz[]) AS last_written_at,
               unnest(@output_existed::boolean[]) AS existed_before, unnest(@output_file_ids::text[]) AS file_id
    ) AS w
    ON CONFLICT (path) WHERE deleted_at IS NULL DO UPDATE SET
        size_bytes = excluded.size_bytes,
        run_id = excluded.run_id,
        last_written_at = excluded.last_written_at,
        file_id = excluded.file_id
)
SELECT count(*) FROM run;

-- name: RunFinishOwned :one
-- Writes a run's terminal columns only while the caller owns it and it is
-- not terminal (the first finalizer wins, a reclaimed run is not
-- overwritten), and stores its log lines and ledger entries (as RunFinish)
-- either way, in one statement. Returns 1 when the run was written.
WITH run AS (
    UPDATE faucet_runs f SET
        status = @status,
        started_at = @started_at,
        finished_at = @finished_at,
        records_written = @records_written,
        error = @error,
        invocations = @invocations,
        lease_expires_at = NULL
    WHERE f.run_id = @run_id AND f.owner = @owner::text AND f.status NOT IN ('completed', 'failed', 'cancelled')
    RETURNING 1
), lines AS (
    INSERT INTO faucet_run_logs (run_id, seq, ts, level, line)
    SELECT @run_id, unnest(@seqs::bigint[]), unnest(@tss::timestamptz[]), unnest(@levels::text[]), unnest(@lines::text[])
    ON CONFLICT (run_id, seq) DO NOTHING
), outputs AS (
    INSERT INTO faucet_local_outputs AS o (id, path, size_bytes, run_id, first_run_id, first_written_at, last_written_at, existed_before, file_id)
    SELECT w.id, w.path, w.size_bytes, w.run_id, w.run_id, w.first_written_at, w.last_written_at, w.existed_before, NULLIF(w.file_id, '')
    FROM (
        SELECT unnest(@output_ids::text[]) AS id, unnest(@output_paths::text[]) AS path,
               unnest(@output_sizes::bigint[]) AS size_bytes, unnest(@output_run_ids::text[]) AS run_id,
               unnest(@output_first_at::timestamptz[]) AS first_written_at, unnest(@output_last_at::timestamptz[]) AS last_written_at,
               unnest(@output_existed::boolean[]) AS existed_before, unnest(@output_file_ids::text[]) AS file_id
    ) AS w
    ON CONFLICT (path) WHERE deleted_at IS NULL DO UPDATE SET
        size_bytes = excluded.size_bytes,
        run_id = excluded.run_id,
        last_written_at = excluded.last_written_at,
        file_id = excluded.file_id
)
SELECT count(*) FROM run;

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

-- name: RunRenewLeases :many
UPDATE faucet_runs SET lease_expires_at = @lease_expires_at::timestamptz
WHERE owner = @owner::text AND status IN ('pending', 'queued', 'running', 'sharded')
RETURNING run_id;

-- name: RunFailLapsed :execrows
-- Fails queued and running runs whose owner's lease lapsed.
UPDATE faucet_runs SET
    status = 'failed',
    finished_at = @now::timestamptz,
    error = @error::text,
    owner = NULL,
    lease_expires_at = NULL
WHERE status IN ('queued', 'running')
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz);

-- name: RunFailUnfinished :many
-- Fails every queued and running run, whatever its lease.
UPDATE faucet_runs SET
    status = 'failed',
    finished_at = @now::timestamptz,
    error = @error::text,
    owner = NULL,
    lease_expires_at = NULL
WHERE status IN ('queued', 'running')
RETURNING run_id;

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
    lease_expires_at = @lease_expires_at::timestamptz
WHERE r.run_id = ANY (ARRAY(SELECT picked.run_id FROM picked)) AND r.status = 'pending'
RETURNING r.*;

-- name: RunPoisonLapsed :execrows
-- Fails running runs whose lease lapsed and whose attempts reached the cap.
-- error_format gets the row's attempt+1 and attempt (db.PoisonErrorFormat).
UPDATE faucet_runs SET
    status = 'failed',
    finished_at = @now::timestamptz,
    error = format(@error_format::text, attempt + 1, attempt),
    owner = NULL,
    lease_expires_at = NULL
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz)
  AND attempt >= @max_attempts::integer;

-- name: RunRequeueLapsed :execrows
-- Puts running runs whose lease lapsed back to pending for any instance to
-- claim, counting the attempt. cancel_requested_at survives.
UPDATE faucet_runs SET
    status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz)
  AND attempt < @max_attempts::integer;

-- name: RunFinalizeShardedParent :execrows
-- Finalizes a sharded run none of whose shards is pending or running,
-- fenced on its status; owner and lease stay as they are. records_written
-- becomes the sum over its shards.
UPDATE faucet_runs r SET
    status = @status,
    finished_at = @finished_at::timestamptz,
    error = sqlc.narg(error)::text,
    records_written = (SELECT COALESCE(sum(s.records_written), 0)::bigint FROM faucet_shards s WHERE s.run_id = r.run_id)
WHERE r.run_id = @run_id AND r.status = 'sharded'
  AND NOT EXISTS (SELECT 1 FROM faucet_shards s WHERE s.run_id = r.run_id AND s.status IN ('pending', 'running'));

-- name: RunCancelPending :execrows
UPDATE faucet_runs SET
    status = 'cancelled',
    finished_at = @now::timestamptz,
    lease_expires_at = NULL
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
        error = @shard_error::text
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
    lease_expires_at = @lease_expires_at::timestamptz
WHERE run_id = @run_id AND owner = @owner::text AND status = 'queued';

-- name: RunShard :one
-- Turns a running run the caller owns (or one it already sharded, so a
-- repeated call completes the set) into a sharded run and inserts its shards
-- from a JSON array of {shard_id, descriptor, size_estimate}, in one
-- statement: the shards are inserted only when the fence let the run through,
-- and inserted cancelled when the run already carries a cancel request (no
-- claimer would ever take them).
WITH marked AS (
    UPDATE faucet_runs r SET status = 'sharded'
    WHERE r.run_id = @run_id AND r.owner = @owner::text AND r.status IN ('running', 'sharded')
    RETURNING r.run_id, r.cancel_requested_at
), inserted AS (
    INSERT INTO faucet_shards (run_id, shard_id, descriptor, size_estimate, status, finished_at, error)
    SELECT m.run_id, s.shard_id, s.descriptor, s.size_estimate,
        CASE WHEN m.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END,
        CASE WHEN m.cancel_requested_at IS NULL THEN NULL ELSE @now::timestamptz END,
        CASE WHEN m.cancel_requested_at IS NULL THEN NULL ELSE @cancelled_error::text END
    FROM marked m, jsonb_to_recordset(@shards::jsonb) AS s(shard_id text, descriptor jsonb, size_estimate bigint)
    ON CONFLICT (run_id, shard_id) DO NOTHING
)
SELECT count(*) FROM marked;

-- name: RunSetProgress :execrows
-- Records the live counts of running runs the caller owns, given as
-- parallel arrays.
UPDATE faucet_runs r SET records_written = p.records
FROM (SELECT unnest(@run_ids::text[]) AS run_id, unnest(@records::bigint[]) AS records) p
WHERE r.run_id = p.run_id AND r.owner = @owner::text AND r.status = 'running';

-- name: RunRelease :execrows
-- Hands a running run the caller owns back to pending for any instance.
UPDATE faucet_runs SET
    status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1
WHERE run_id = @run_id AND owner = @owner::text AND status = 'running';
