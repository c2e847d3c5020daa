-- name: RunLogInsert :execrows
-- Appends a batch of lines; a seq already stored is kept as it is.
INSERT INTO faucet_run_logs (run_id, seq, ts, level, line)
SELECT @run_id, unnest(@seqs::bigint[]), unnest(@tss::timestamptz[]), unnest(@levels::text[]), unnest(@lines::text[])
ON CONFLICT (run_id, seq) DO NOTHING;

-- name: RunLogTrim :exec
-- Keeps the lines among the newest keep sequence numbers of the block
-- [block_start, block_end) of a run and, when it dropped any, marks the run's
-- logs truncated. It costs an index seek plus the lines it deletes, however
-- many lines the run keeps.
WITH cut AS (
    SELECT max(c.seq) - @keep::bigint AS seq FROM faucet_run_logs c
    WHERE c.run_id = @run_id AND c.seq >= @block_start::bigint AND c.seq < @block_end::bigint
), trimmed AS (
    DELETE FROM faucet_run_logs l USING cut
    WHERE l.run_id = @run_id AND l.seq >= @block_start::bigint AND l.seq <= cut.seq
    RETURNING 1
)
INSERT INTO faucet_run_log_truncations (run_id, truncated_at)
SELECT @run_id, @now::timestamptz WHERE EXISTS (SELECT 1 FROM trimmed)
ON CONFLICT (run_id) DO UPDATE SET truncated_at = excluded.truncated_at;

-- name: RunLogList :many
SELECT seq, ts, level, line FROM faucet_run_logs
WHERE run_id = @run_id AND seq > @after
ORDER BY seq
LIMIT @page_limit;

-- name: RunLogTruncated :one
SELECT EXISTS (SELECT 1 FROM faucet_run_log_truncations WHERE run_id = @run_id);

-- name: RunLogPurge :one
-- Deletes lines captured before the cutoff, and the truncation mark of every
-- run this leaves without lines; returns the lines deleted.
WITH gone AS (
    DELETE FROM faucet_run_logs d WHERE d.ts < @before::timestamptz RETURNING d.run_id
), marks AS (
    DELETE FROM faucet_run_log_truncations t
    WHERE t.run_id IN (SELECT g.run_id FROM gone g)
      AND NOT EXISTS (SELECT 1 FROM faucet_run_logs l WHERE l.run_id = t.run_id AND l.ts >= @before::timestamptz)
)
SELECT count(*) FROM gone;
