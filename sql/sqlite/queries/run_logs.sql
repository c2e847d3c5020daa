-- RunLogInsert appends one line; a seq already stored is kept as it is. A
-- batch runs it once per line, prepared once: cheaper in SQLite than one
-- statement unpacking a JSON array of the lines, at any batch size.
-- name: RunLogInsert :exec
INSERT INTO faucet_run_logs (run_id, seq, ts, level, line)
VALUES (sqlc.arg(run_id), sqlc.arg(seq), sqlc.arg(ts), sqlc.arg(level), sqlc.arg(line))
ON CONFLICT (run_id, seq) DO NOTHING;

-- RunLogTrim keeps the lines among the newest keep sequence numbers of the
-- block [block_start, block_end) of a run: it deletes every line of the block
-- keep or more below the block's newest seq. It costs an index seek plus the
-- lines it deletes, however many lines the run keeps.
-- name: RunLogTrim :execrows
DELETE FROM faucet_run_logs
WHERE faucet_run_logs.run_id = sqlc.arg(run_id)
  AND faucet_run_logs.seq >= sqlc.arg(block_start)
  AND faucet_run_logs.seq <= (SELECT max(k.seq) FROM faucet_run_logs k
              WHERE k.run_id = sqlc.arg(run_id) AND k.seq >= sqlc.arg(block_start) AND k.seq < sqlc.arg(block_end))
             - CAST(sqlc.arg(keep) AS INTEGER);

-- name: RunLogMarkTruncated :exec
INSERT INTO faucet_run_log_truncations (run_id, truncated_at)
VALUES (sqlc.arg(run_id), sqlc.arg(now))
ON CONFLICT (run_id) DO UPDATE SET truncated_at = excluded.truncated_at;

-- name: RunLogList :many
SELECT seq, ts, level, line FROM faucet_run_logs
WHERE run_id = sqlc.arg(run_id) AND seq > sqlc.arg(after_seq)
ORDER BY seq
LIMIT sqlc.arg(row_limit);

-- name: RunLogTruncated :one
SELECT EXISTS (SELECT 1 FROM faucet_run_log_truncations WHERE run_id = sqlc.arg(run_id)) AS truncated;

-- name: RunLogPurge :execrows
DELETE FROM faucet_run_logs WHERE ts < sqlc.arg(before);

-- name: RunLogPurgeTruncations :execrows
DELETE FROM faucet_run_log_truncations
WHERE NOT EXISTS (SELECT 1 FROM faucet_run_logs l WHERE l.run_id = faucet_run_log_truncations.run_id);

-- name: RunLogDeleteByRun :execrows
DELETE FROM faucet_run_logs WHERE run_id = sqlc.arg(run_id);

-- name: RunLogDeleteTruncationByRun :execrows
DELETE FROM faucet_run_log_truncations WHERE run_id = sqlc.arg(run_id);

-- RunLogPurgeForRuns and RunLogPurgeTruncationsForRuns delete the logs of the
-- runs RunPurge is about to delete; they run first, in the same transaction.
-- name: RunLogPurgeForRuns :execrows
DELETE FROM faucet_run_logs
WHERE run_id IN (
    SELECT r.run_id FROM faucet_runs r INDEXED BY faucet_runs_finished_idx
    WHERE (r.status = 'completed' OR r.status = 'failed' OR r.status = 'cancelled') AND r.finished_at < sqlc.arg(before));

-- name: RunLogPurgeTruncationsForRuns :execrows
DELETE FROM faucet_run_log_truncations
WHERE run_id IN (
    SELECT r.run_id FROM faucet_runs r INDEXED BY faucet_runs_finished_idx
    WHERE (r.status = 'completed' OR r.status = 'failed' OR r.status = 'cancelled') AND r.finished_at < sqlc.arg(before));
