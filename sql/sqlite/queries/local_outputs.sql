-- name: LocalOutputUpsert :one
-- A write to a path with a live entry moves that entry on, or else starts a
-- new one, whose existed_before then stays as the first write saw it.
INSERT INTO faucet_local_outputs (id, path, size_bytes, run_id, first_run_id, first_written_at, last_written_at, existed_before, file_id)
VALUES (sqlc.arg(id), sqlc.arg(path), sqlc.arg(size_bytes), sqlc.arg(run_id), sqlc.arg(run_id),
        sqlc.arg(written_at), sqlc.arg(written_at), sqlc.arg(existed_before), sqlc.narg(file_id))
ON CONFLICT (path) WHERE deleted_at IS NULL DO UPDATE SET
    size_bytes = excluded.size_bytes,
    run_id = excluded.run_id,
    last_written_at = excluded.last_written_at,
    file_id = excluded.file_id
RETURNING *;

-- name: LocalOutputGet :one
SELECT * FROM faucet_local_outputs WHERE id = sqlc.arg(id);

-- name: LocalOutputList :many
SELECT * FROM faucet_local_outputs
WHERE (CAST(sqlc.narg(path_prefix) AS TEXT) IS NULL OR substr(path, 1, length(sqlc.narg(path_prefix))) = sqlc.narg(path_prefix))
  AND (CAST(sqlc.arg(cursor) AS TEXT) = '' OR id < sqlc.arg(cursor))
ORDER BY id DESC
LIMIT sqlc.arg(row_limit);

-- name: LocalOutputListByRun :many
-- The entries a run wrote first or last, through the two run indexes.
SELECT * FROM faucet_local_outputs
WHERE (run_id = sqlc.arg(run_id) OR first_run_id = sqlc.arg(run_id))
  AND (CAST(sqlc.narg(path_prefix) AS TEXT) IS NULL OR substr(path, 1, length(sqlc.narg(path_prefix))) = sqlc.narg(path_prefix))
  AND (CAST(sqlc.arg(cursor) AS TEXT) = '' OR id < sqlc.arg(cursor))
ORDER BY id DESC
LIMIT sqlc.arg(row_limit);

-- name: LocalOutputMarkDeleted :one
UPDATE faucet_local_outputs SET deleted_at = sqlc.arg(deleted_at)
WHERE id = sqlc.arg(id) AND deleted_at IS NULL
RETURNING *;
