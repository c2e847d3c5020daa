-- name: LocalOutputUpsert :one
-- A write to a path with a live entry moves that entry on, or else starts a
-- new one, whose existed_before then stays as the first write saw it.
INSERT INTO faucet_local_outputs (id, path, size_bytes, run_id, first_run_id, first_written_at, last_written_at, existed_before, file_id)
VALUES (@id, @path, @size_bytes, @run_id, @run_id, @written_at, @written_at, @existed_before, sqlc.narg(file_id))
ON CONFLICT (path) WHERE deleted_at IS NULL DO UPDATE SET
    size_bytes = excluded.size_bytes,
    run_id = excluded.run_id,
    last_written_at = excluded.last_written_at,
    file_id = excluded.file_id
RETURNING *;

-- name: LocalOutputGet :one
SELECT * FROM faucet_local_outputs WHERE id = @id;

-- name: LocalOutputList :many
SELECT * FROM faucet_local_outputs
WHERE (sqlc.narg(path_prefix)::text IS NULL OR starts_with(path, sqlc.narg(path_prefix)::text))
  AND (@cursor::text = '' OR id < @cursor::text)
ORDER BY id DESC
LIMIT @page_limit;

-- name: LocalOutputListByRun :many
-- The entries a run wrote first or last, through the two run indexes.
SELECT * FROM faucet_local_outputs
WHERE (run_id = @run_id OR first_run_id = @run_id)
  AND (sqlc.narg(path_prefix)::text IS NULL OR starts_with(path, sqlc.narg(path_prefix)::text))
  AND (@cursor::text = '' OR id < @cursor::text)
ORDER BY id DESC
LIMIT @page_limit;

-- name: LocalOutputMarkDeleted :one
UPDATE faucet_local_outputs SET deleted_at = @deleted_at
WHERE id = @id AND deleted_at IS NULL
RETURNING *;
