-- ShardInsert inserts a run's shard set from a JSON array of
-- {shard_id, descriptor, size_estimate}; shards already present are kept.
-- name: ShardInsert :execrows
INSERT INTO faucet_shards (run_id, shard_id, descriptor, size_estimate)
SELECT sqlc.arg(run_id), json_extract(j.value, '$.shard_id'), j.value -> '$.descriptor',
       json_extract(j.value, '$.size_estimate')
FROM json_each(CAST(sqlc.arg(shards) AS TEXT)) AS j
WHERE true
ON CONFLICT (run_id, shard_id) DO NOTHING;

-- ShardClaim claims in one statement, exclusive across processes like
-- RunClaimPending. Shards of a run with a cancel request stay pending.
-- name: ShardClaim :many
UPDATE faucet_shards
SET status = 'running', owner = sqlc.arg(owner), lease_expires_at = sqlc.arg(lease_expires_at)
WHERE status = 'pending'
  AND rowid IN (
      SELECT s.rowid FROM faucet_shards s JOIN faucet_runs r ON r.run_id = s.run_id
      WHERE s.status = 'pending'
        AND r.cancel_requested_at IS NULL
      ORDER BY s.size_estimate DESC, s.run_id, s.shard_id
      LIMIT sqlc.arg(row_limit))
RETURNING run_id, shard_id, descriptor, size_estimate, attempt;

-- name: ShardRenewLeases :many
UPDATE faucet_shards SET lease_expires_at = sqlc.arg(lease_expires_at)
WHERE owner = sqlc.arg(owner) AND status = 'running'
RETURNING run_id, shard_id;

-- name: ShardPoisonLapsed :execrows
-- error_format gets the row's attempt+1 and attempt (db.PoisonErrorFormat).
UPDATE faucet_shards
SET status = 'failed',
    finished_at = sqlc.arg(now),
    owner = NULL,
    lease_expires_at = NULL,
    error = printf(CAST(sqlc.arg(error_format) AS TEXT), attempt + 1, attempt)
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < sqlc.arg(now))
  AND attempt >= sqlc.arg(max_attempts);

-- name: ShardRequeueLapsed :execrows
UPDATE faucet_shards
SET status = 'pending', owner = NULL, lease_expires_at = NULL, attempt = attempt + 1
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < sqlc.arg(now))
  AND attempt < sqlc.arg(max_attempts);

-- name: ShardFinalize :execrows
UPDATE faucet_shards
SET status = sqlc.arg(status),
    records_written = sqlc.arg(records_written),
    error = sqlc.narg(error),
    finished_at = sqlc.arg(now),
    lease_expires_at = NULL,
    lineage = sqlc.narg(lineage)
WHERE run_id = sqlc.arg(run_id) AND shard_id = sqlc.arg(shard_id)
  AND owner = sqlc.arg(owner) AND status = 'running';

-- name: ShardLineageList :many
SELECT CAST(lineage AS TEXT) AS lineage FROM faucet_shards
WHERE run_id = sqlc.arg(run_id) AND status = 'completed' AND lineage IS NOT NULL
ORDER BY shard_id;

-- name: ShardProgress :one
SELECT count(*) AS total,
       CAST(coalesce(sum(status = 'pending'), 0) AS INTEGER) AS pending,
       CAST(coalesce(sum(status = 'running'), 0) AS INTEGER) AS running,
       CAST(coalesce(sum(status = 'completed'), 0) AS INTEGER) AS completed,
       CAST(coalesce(sum(status = 'failed'), 0) AS INTEGER) AS failed,
       CAST(coalesce(sum(status = 'cancelled'), 0) AS INTEGER) AS cancelled,
       CAST(coalesce(sum(records_written), 0) AS INTEGER) AS records_written
FROM faucet_shards
WHERE run_id = sqlc.arg(run_id);

-- name: ShardCancelPending :execrows
UPDATE faucet_shards
SET status = 'cancelled', finished_at = sqlc.arg(now), error = sqlc.arg(error)
WHERE run_id = sqlc.arg(run_id) AND status = 'pending';

-- name: ShardPendingCancellations :many
SELECT DISTINCT s.run_id FROM faucet_shards s JOIN faucet_runs r ON r.run_id = s.run_id
WHERE s.owner = sqlc.arg(owner) AND s.status = 'running' AND r.cancel_requested_at IS NOT NULL
ORDER BY s.run_id;

-- name: ShardCancelStranded :execrows
-- Cancels the pending shards of sharded runs that carry a cancel request. No
-- member claims them (ShardClaim skips such runs), so a shard that went back
-- to pending after the cancel (its worker's lease lapsed, or the worker shut
-- down and handed it back) would otherwise keep its run sharded forever.
UPDATE faucet_shards
SET status = 'cancelled', finished_at = sqlc.arg(now), error = sqlc.arg(error)
WHERE status = 'pending'
  AND run_id IN (SELECT r.run_id FROM faucet_runs r
                 WHERE r.status = 'sharded' AND r.cancel_requested_at IS NOT NULL);

-- ShardCompletedParents lists sharded runs whose shards are all terminal, with
-- the counts that decide the run's outcome.
-- name: ShardCompletedParents :many
SELECT s.run_id,
       count(*) AS total,
       CAST(sum(s.status = 'failed') AS INTEGER) AS failed,
       CAST(sum(s.status = 'cancelled') AS INTEGER) AS cancelled
FROM faucet_shards s JOIN faucet_runs r ON r.run_id = s.run_id
WHERE r.status = 'sharded'
GROUP BY s.run_id
HAVING sum(s.status IN ('pending', 'running')) = 0
ORDER BY s.run_id;

-- name: ShardDeleteByRun :execrows
DELETE FROM faucet_shards WHERE run_id = sqlc.arg(run_id);

-- name: ShardPurgeOrphans :execrows
DELETE FROM faucet_shards
WHERE NOT EXISTS (SELECT 1 FROM faucet_runs r WHERE r.run_id = faucet_shards.run_id);

-- name: ShardRelease :execrows
UPDATE faucet_shards
SET status = 'pending', owner = NULL, lease_expires_at = NULL, attempt = attempt + 1
WHERE run_id = sqlc.arg(run_id) AND shard_id = sqlc.arg(shard_id) AND owner = sqlc.arg(owner) AND status = 'running';

-- name: ShardProgressInFlight :one
-- Counts the shards of every run still sharded, cluster-wide, by state: the
-- status index finds the sharded runs and the primary key their shards, so
-- the cost follows the work in progress, not the history.
SELECT count(*) AS total,
       CAST(coalesce(sum(s.status = 'pending'), 0) AS INTEGER) AS pending,
       CAST(coalesce(sum(s.status = 'running'), 0) AS INTEGER) AS running,
       CAST(coalesce(sum(s.status = 'completed'), 0) AS INTEGER) AS completed,
       CAST(coalesce(sum(s.status = 'failed'), 0) AS INTEGER) AS failed,
       CAST(coalesce(sum(s.status = 'cancelled'), 0) AS INTEGER) AS cancelled,
       CAST(coalesce(sum(s.records_written), 0) AS INTEGER) AS records_written
FROM faucet_runs r
JOIN faucet_shards s ON s.run_id = r.run_id
WHERE r.status = 'sharded';

-- name: ShardList :many
SELECT shard_id, status, owner, attempt, records_written, size_estimate, error, finished_at
FROM faucet_shards
WHERE run_id = sqlc.arg(run_id)
ORDER BY shard_id;
