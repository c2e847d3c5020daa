-- name: RunInsert :exec
INSERT INTO faucet_runs (
    run_id, name, labels, status, submitted_at, started_at, finished_at,
    idempotency_key, owner, lease_expires_at, attempt, records_written, error, submission, invocations,
    template_id, template_version
) VALUES (
    sqlc.arg(run_id), sqlc.narg(name), sqlc.arg(labels), sqlc.arg(status),
    sqlc.arg(submitted_at), sqlc.narg(started_at), sqlc.narg(finished_at),
    sqlc.narg(idempotency_key), sqlc.arg(owner), sqlc.arg(lease_expires_at),
    sqlc.arg(attempt), sqlc.arg(records_written), sqlc.narg(error), sqlc.arg(submission), sqlc.narg(invocations),
    sqlc.narg(template_id), sqlc.narg(template_version)
);

-- RunFinish writes a run's terminal columns, inserting the whole run when
-- the store lacks it; the submission of a stored run is never rewritten.
-- name: RunFinish :exec
INSERT INTO faucet_runs (
    run_id, name, labels, status, submitted_at, started_at, finished_at,
    idempotency_key, owner, lease_expires_at, attempt, records_written, error, submission, invocations,
    template_id, template_version
) VALUES (
    sqlc.arg(run_id), sqlc.narg(name), sqlc.arg(labels), sqlc.arg(status),
    sqlc.arg(submitted_at), sqlc.narg(started_at), sqlc.narg(finished_at),
    sqlc.narg(idempotency_key), sqlc.arg(owner), NULL,
    sqlc.arg(attempt), sqlc.arg(records_written), sqlc.narg(error), sqlc.arg(submission), sqlc.narg(invocations),
    sqlc.narg(template_id), sqlc.narg(template_version)
)
ON CONFLICT (run_id) DO UPDATE SET
    status = excluded.status,
    started_at = excluded.started_at,
    finished_at = excluded.finished_at,
    records_written = excluded.records_written,
    error = excluded.error,
    invocations = excluded.invocations,
    owner = excluded.owner,
    lease_expires_at = NULL;

-- RunFinishStored writes the terminal columns of a run the store has,
-- whoever owns it: RunFinish without the insert it falls back to, so a
-- stored run's submission is neither sent nor checked again.
-- name: RunFinishStored :execrows
UPDATE faucet_runs
SET status = sqlc.arg(status),
    started_at = sqlc.narg(started_at),
    finished_at = sqlc.narg(finished_at),
    records_written = sqlc.arg(records_written),
    error = sqlc.narg(error),
    invocations = sqlc.narg(invocations),
    owner = sqlc.arg(owner),
    lease_expires_at = NULL
WHERE run_id = sqlc.arg(run_id);

-- RunFinishOwned writes a run's terminal columns only while the caller owns
-- it and it is not terminal: the first finalizer wins, a reclaimed run is
-- not overwritten.
-- name: RunFinishOwned :execrows
UPDATE faucet_runs
SET status = sqlc.arg(status),
    started_at = sqlc.narg(started_at),
    finished_at = sqlc.narg(finished_at),
    records_written = sqlc.arg(records_written),
    error = sqlc.narg(error),
    invocations = sqlc.narg(invocations),
    lease_expires_at = NULL
WHERE run_id = sqlc.arg(run_id)
  AND owner = sqlc.arg(owner)
  AND status NOT IN ('completed', 'failed', 'cancelled');

-- name: RunGet :one
SELECT * FROM faucet_runs WHERE run_id = sqlc.arg(run_id);

-- name: RunGetMany :many
SELECT * FROM faucet_runs
WHERE run_id IN (SELECT value FROM json_each(CAST(sqlc.arg(run_ids) AS TEXT)));

-- RunList pages newest first. statuses is a JSON array (NULL: every status);
-- the keyset bound is the cursor run's (submitted_at, run_id), above every
-- row without a cursor, and NULL, which no row passes, for a cursor that
-- names no run.
-- name: RunList :many
SELECT * FROM faucet_runs
WHERE (CAST(sqlc.narg(statuses) AS TEXT) IS NULL OR status IN (SELECT value FROM json_each(sqlc.narg(statuses))))
  AND (CAST(sqlc.narg(name) AS TEXT) IS NULL OR name = sqlc.narg(name))
  AND (CAST(sqlc.narg(since) AS INTEGER) IS NULL OR submitted_at >= sqlc.narg(since))
  AND (CAST(sqlc.narg(until) AS INTEGER) IS NULL OR submitted_at <= sqlc.narg(until))
  AND (submitted_at, run_id) < (
      SELECT CASE WHEN CAST(sqlc.arg(cursor) AS TEXT) = '' THEN 9223372036854775807 ELSE max(c.submitted_at) END, coalesce(max(c.run_id), '')
      FROM faucet_runs c WHERE c.run_id = sqlc.arg(cursor))
ORDER BY submitted_at DESC, run_id DESC
LIMIT sqlc.arg(row_limit);

-- RunListActive is RunList for statuses runs only pass through (pending,
-- queued, running, sharded): few runs hold one at a time, so reading them
-- all through the status index and sorting them beats walking the whole
-- history newest first looking for them.
-- name: RunListActive :many
SELECT * FROM faucet_runs INDEXED BY faucet_runs_status_submitted_idx
WHERE status IN (SELECT value FROM json_each(CAST(sqlc.arg(statuses) AS TEXT)))
  AND (CAST(sqlc.narg(name) AS TEXT) IS NULL OR name = sqlc.narg(name))
  AND (CAST(sqlc.narg(since) AS INTEGER) IS NULL OR submitted_at >= sqlc.narg(since))
  AND (CAST(sqlc.narg(until) AS INTEGER) IS NULL OR submitted_at <= sqlc.narg(until))
  AND (submitted_at, run_id) < (
      SELECT CASE WHEN CAST(sqlc.arg(cursor) AS TEXT) = '' THEN 9223372036854775807 ELSE max(c.submitted_at) END, coalesce(max(c.run_id), '')
      FROM faucet_runs c WHERE c.run_id = sqlc.arg(cursor))
ORDER BY submitted_at DESC, run_id DESC
LIMIT sqlc.arg(row_limit);

-- RunListTemplate is RunList for the runs of one template, read newest
-- first through the template index rather than found in a walk of the
-- whole history.
-- name: RunListTemplate :many
SELECT r.* FROM faucet_runs r INDEXED BY faucet_runs_template_idx
WHERE r.template_id = sqlc.arg(template)
  AND (CAST(sqlc.narg(statuses) AS TEXT) IS NULL OR r.status IN (SELECT value FROM json_each(sqlc.narg(statuses))))
  AND (CAST(sqlc.narg(name) AS TEXT) IS NULL OR r.name = sqlc.narg(name))
  AND (CAST(sqlc.narg(since) AS INTEGER) IS NULL OR r.submitted_at >= sqlc.narg(since))
  AND (CAST(sqlc.narg(until) AS INTEGER) IS NULL OR r.submitted_at <= sqlc.narg(until))
  AND (r.submitted_at, r.run_id) < (
      SELECT CASE WHEN CAST(sqlc.arg(cursor) AS TEXT) = '' THEN 9223372036854775807 ELSE max(c.submitted_at) END, coalesce(max(c.run_id), '')
      FROM faucet_runs c WHERE c.run_id = sqlc.arg(cursor))
ORDER BY r.submitted_at DESC, r.run_id DESC
LIMIT sqlc.arg(row_limit);

-- name: RunStatus :one
SELECT status FROM faucet_runs WHERE run_id = sqlc.arg(run_id);

-- name: RunDelete :execrows
DELETE FROM faucet_runs
WHERE run_id = sqlc.arg(run_id) AND status IN ('completed', 'failed', 'cancelled');

-- RunRenewLeases, RunPurge and the log purges spell their status condition
-- as the partial index they use spells its WHERE (migration 00009), so SQLite
-- sees that the index covers them.
-- name: RunRenewLeases :many
UPDATE faucet_runs SET lease_expires_at = sqlc.arg(lease_expires_at)
WHERE owner = sqlc.arg(owner) AND (status = 'pending' OR status = 'queued' OR status = 'running' OR status = 'sharded')
RETURNING run_id;

-- name: RunFailLapsed :execrows
UPDATE faucet_runs
SET status = 'failed',
    finished_at = sqlc.arg(now),
    error = sqlc.arg(error),
    owner = NULL,
    lease_expires_at = NULL
WHERE status IN ('queued', 'running')
  AND (lease_expires_at IS NULL OR lease_expires_at < sqlc.arg(now));

-- name: RunFailUnfinished :many
UPDATE faucet_runs
SET status = 'failed',
    finished_at = sqlc.arg(now),
    error = sqlc.arg(error),
    owner = NULL,
    lease_expires_at = NULL
WHERE status IN ('queued', 'running')
RETURNING run_id;

-- RunClaimPending claims in one statement, so SQLite's write lock makes it
-- exclusive across connections and processes. The claimed rows are named by
-- rowid, and the unary + on the status fence keeps SQLite from answering it
-- with the status index (walking every pending run): it looks each claimed
-- row up directly and checks the fence there.
-- name: RunClaimPending :many
UPDATE faucet_runs
SET status = 'running',
    started_at = sqlc.arg(now),
    owner = sqlc.arg(owner),
    lease_expires_at = sqlc.arg(lease_expires_at)
WHERE +status = 'pending'
  AND rowid IN (
      SELECT p.rowid FROM faucet_runs p
      WHERE p.status = 'pending'
      ORDER BY p.submitted_at, p.run_id
      LIMIT sqlc.arg(row_limit))
RETURNING *;

-- name: RunPoisonLapsed :execrows
-- error_format gets the row's attempt+1 and attempt (db.PoisonErrorFormat).
UPDATE faucet_runs
SET status = 'failed',
    finished_at = sqlc.arg(now),
    owner = NULL,
    lease_expires_at = NULL,
    error = printf(CAST(sqlc.arg(error_format) AS TEXT), attempt + 1, attempt)
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < sqlc.arg(now))
  AND attempt >= sqlc.arg(max_attempts);

-- name: RunRequeueLapsed :execrows
UPDATE faucet_runs
SET status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1
WHERE status = 'running'
  AND (lease_expires_at IS NULL OR lease_expires_at < sqlc.arg(now))
  AND attempt < sqlc.arg(max_attempts);

-- RunFinalizeShardedParent finalizes a sharded run none of whose shards is
-- pending or running; records_written becomes the sum over its shards.
-- name: RunFinalizeShardedParent :execrows
UPDATE faucet_runs
SET status = sqlc.arg(status),
    finished_at = sqlc.arg(finished_at),
    error = sqlc.narg(error),
    records_written = (SELECT coalesce(sum(s.records_written), 0) FROM faucet_shards s WHERE s.run_id = faucet_runs.run_id)
WHERE faucet_runs.run_id = sqlc.arg(run_id) AND faucet_runs.status = 'sharded'
  AND NOT EXISTS (SELECT 1 FROM faucet_shards s
                  WHERE s.run_id = faucet_runs.run_id AND s.status IN ('pending', 'running'));

-- name: RunCancelPending :execrows
UPDATE faucet_runs
SET status = 'cancelled',
    finished_at = sqlc.arg(now),
    lease_expires_at = NULL
WHERE run_id = sqlc.arg(run_id) AND status = 'pending';

-- name: RunRequestCancel :one
UPDATE faucet_runs
SET cancel_requested_at = coalesce(cancel_requested_at, sqlc.arg(now))
WHERE run_id = sqlc.arg(run_id) AND status IN ('running', 'sharded')
RETURNING status;

-- RunPendingCancellations names the cancel index: the owner index covers a
-- running run too, and holds every active run of the owner, not just the
-- few with a cancel requested.
-- name: RunPendingCancellations :many
SELECT run_id FROM faucet_runs INDEXED BY faucet_runs_cancel_idx
WHERE owner = sqlc.arg(owner) AND cancel_requested_at IS NOT NULL AND status = 'running'
ORDER BY run_id;

-- name: RunPurge :execrows
DELETE FROM faucet_runs INDEXED BY faucet_runs_finished_idx
WHERE (status = 'completed' OR status = 'failed' OR status = 'cancelled') AND finished_at < sqlc.arg(before);

-- name: RunStart :execrows
UPDATE faucet_runs
SET status = 'running',
    started_at = sqlc.arg(started_at),
    lease_expires_at = sqlc.arg(lease_expires_at)
WHERE run_id = sqlc.arg(run_id) AND owner = sqlc.arg(owner) AND status = 'queued';

-- RunMarkSharded is the first half of RunShard; a run this instance already
-- sharded matches too, so a repeated call completes its shard set. It
-- returns whether the run carries a cancel request.
-- name: RunMarkSharded :one
UPDATE faucet_runs
SET status = 'sharded'
WHERE run_id = sqlc.arg(run_id) AND owner = sqlc.arg(owner) AND status IN ('running', 'sharded')
RETURNING cancel_requested_at IS NOT NULL AS cancel_requested;

-- RunSetProgress updates one run's live count.
-- name: RunSetProgress :execrows
UPDATE faucet_runs
SET records_written = sqlc.arg(records_written)
WHERE run_id = sqlc.arg(run_id) AND owner = sqlc.arg(owner) AND status = 'running';

-- name: RunRelease :execrows
UPDATE faucet_runs
SET status = 'pending',
    owner = NULL,
    lease_expires_at = NULL,
    attempt = attempt + 1
WHERE run_id = sqlc.arg(run_id) AND owner = sqlc.arg(owner) AND status = 'running';
