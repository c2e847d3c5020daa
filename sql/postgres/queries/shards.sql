-- name: ShardClaim :many
-- Claims the largest pending shards of runs without a cancel request in one
-- statement, skipping rows another claimer holds; returns each with its run.
-- The picked keys reach the UPDATE as arrays the primary key answers (even in
-- a generic plan); the pair test keeps exactly the picked shards.
WITH picked AS (
    SELECT p.run_id, p.shard_id
    FROM faucet_shards p
    JOIN faucet_runs pr ON pr.run_id = p.run_id
    WHERE p.status = 'pending' AND pr.cancel_requested_at IS NULL
    ORDER BY p.size_estimate DESC NULLS LAST, p.run_id, p.shard_id
    LIMIT @claim_limit
    FOR UPDATE OF p SKIP LOCKED
)
UPDATE faucet_shards s SET
    status = 'running',
    owner = @owner::text,
    lease_expires_at = @lease_expires_at::timestamptz
FROM faucet_runs r
WHERE s.run_id = ANY (ARRAY(SELECT picked.run_id FROM picked))
  AND s.shard_id = ANY (ARRAY(SELECT picked.shard_id FROM picked))
  AND (s.run_id, s.shard_id) IN (SELECT picked.run_id, picked.shard_id FROM picked)
  AND s.status = 'pending' AND r.run_id = s.run_id
RETURNING s.run_id, s.shard_id, s.descriptor, s.size_estimate, s.attempt,
    r.name, r.labels, r.status, r.submitted_at, r.started_at, r.finished_at, r.idempotency_key,
    r.attempt AS run_attempt, r.records_written, r.error, r.submission, r.invocations,
    r.template_id, r.template_version;

-- name: ShardRenewLeases :many
UPDATE faucet_shards SET lease_expires_at = @lease_expires_at::timestamptz
WHERE owner = @owner::text AND status = 'running'
RETURNING run_id, shard_id;

-- name: ShardPoisonLapsed :execrows
-- error_format gets the row's attempt+1 and attempt (db.PoisonErrorFormat).
UPDATE faucet_shards SET
    status = 'failed',
    finished_at = @now::timestamptz,
    error = format(@error_format::text, attempt + 1, attempt),
    owner = NULL,
    lease_expires_at = NULL
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz)
  AND attempt >= @max_attempts::integer;

-- name: ShardRequeueLapsed :execrows
UPDATE faucet_shards SET
    status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz)
  AND attempt < @max_attempts::integer;

-- name: ShardFinalize :execrows
UPDATE faucet_shards SET
    status = @status,
    records_written = @records_written,
    error = sqlc.narg(error)::text,
    finished_at = @now::timestamptz,
    lease_expires_at = NULL,
    lineage = sqlc.narg(lineage)::jsonb
WHERE run_id = @run_id AND shard_id = @shard_id AND owner = @owner::text AND status = 'running';

-- name: ShardLineageList :many
SELECT lineage::jsonb FROM faucet_shards
WHERE run_id = @run_id AND status = 'completed' AND lineage IS NOT NULL
ORDER BY shard_id;

-- name: ShardProgress :one
SELECT
    count(*) AS total,
    count(*) FILTER (WHERE status = 'pending') AS pending,
    count(*) FILTER (WHERE status = 'running') AS running,
    count(*) FILTER (WHERE status = 'completed') AS completed,
    count(*) FILTER (WHERE status = 'failed') AS failed,
    count(*) FILTER (WHERE status = 'cancelled') AS cancelled,
    COALESCE(sum(records_written), 0)::bigint AS records_written
FROM faucet_shards WHERE run_id = @run_id;

-- name: ShardPendingCancellations :many
SELECT DISTINCT s.run_id
FROM faucet_shards s
JOIN faucet_runs r ON r.run_id = s.run_id
WHERE s.owner = @owner::text AND s.status = 'running' AND r.cancel_requested_at IS NOT NULL
ORDER BY s.run_id;

-- name: ShardCancelStranded :execrows
-- Cancels the pending shards of sharded runs that carry a cancel request. No
-- member claims them (ShardClaim skips such runs), so a shard that went back
-- to pending after the cancel (its worker's lease lapsed, or the worker shut
-- down and handed it back) would otherwise keep its run sharded forever.
UPDATE faucet_shards s SET
    status = 'cancelled',
    finished_at = @now::timestamptz,
    error = @error::text
FROM faucet_runs r
WHERE r.run_id = s.run_id AND r.status = 'sharded' AND r.cancel_requested_at IS NOT NULL
  AND s.status = 'pending';

-- name: ShardCompletedParents :many
-- Lists the sharded runs whose shards are all terminal, with the counts that
-- decide their outcome.
SELECT s.run_id,
    count(*) AS total,
    count(*) FILTER (WHERE s.status = 'failed') AS failed,
    count(*) FILTER (WHERE s.status = 'cancelled') AS cancelled
FROM faucet_runs p
JOIN faucet_shards s ON s.run_id = p.run_id
WHERE p.status = 'sharded'
GROUP BY s.run_id
HAVING count(*) FILTER (WHERE s.status IN ('pending', 'running')) = 0
ORDER BY s.run_id;

-- name: ShardPurgeOrphans :execrows
DELETE FROM faucet_shards s
WHERE NOT EXISTS (SELECT 1 FROM faucet_runs r WHERE r.run_id = s.run_id);

-- name: ShardRelease :execrows
-- Hands a running shard the caller owns back to pending for any instance.
UPDATE faucet_shards SET status = 'pending', owner = NULL, lease_expires_at = NULL, attempt = attempt + 1
WHERE run_id = @run_id AND shard_id = @shard_id AND owner = @owner::text AND status = 'running';

-- name: ShardProgressInFlight :one
-- Counts the shards of every run still sharded, cluster-wide, by state: the
-- partial index on sharded runs finds the runs and the primary key their
-- shards, so the cost follows the work in progress, not the history.
SELECT
    count(*) AS total,
    count(*) FILTER (WHERE s.status = 'pending') AS pending,
    count(*) FILTER (WHERE s.status = 'running') AS running,
    count(*) FILTER (WHERE s.status = 'completed') AS completed,
    count(*) FILTER (WHERE s.status = 'failed') AS failed,
    count(*) FILTER (WHERE s.status = 'cancelled') AS cancelled,
    COALESCE(sum(s.records_written), 0)::bigint AS records_written
FROM faucet_runs r
JOIN faucet_shards s ON s.run_id = r.run_id
WHERE r.status = 'sharded';

-- name: ShardList :many
SELECT shard_id, status, owner, attempt, records_written, size_estimate, error, finished_at
FROM faucet_shards
WHERE run_id = @run_id
ORDER BY shard_id;
