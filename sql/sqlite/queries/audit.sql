-- name: AuditInsert :exec
INSERT INTO faucet_audit (id, ts, principal, role, action, run_id, config_fingerprint, source_ip, result)
VALUES (sqlc.arg(id), sqlc.arg(ts), sqlc.arg(principal), sqlc.arg(role), sqlc.arg(action),
        sqlc.narg(run_id), sqlc.narg(config_fingerprint), sqlc.narg(source_ip), sqlc.arg(result));

-- name: AuditList :many
SELECT * FROM faucet_audit
WHERE (CAST(sqlc.narg(principal) AS TEXT) IS NULL OR principal = sqlc.narg(principal))
  AND (CAST(sqlc.narg(action) AS TEXT) IS NULL OR action = sqlc.narg(action))
  AND (CAST(sqlc.narg(since) AS INTEGER) IS NULL OR ts >= sqlc.narg(since))
  AND (CAST(sqlc.narg(until) AS INTEGER) IS NULL OR ts <= sqlc.narg(until))
ORDER BY ts DESC, id DESC
LIMIT sqlc.arg(row_limit);

-- name: AuditPurge :execrows
DELETE FROM faucet_audit WHERE ts < sqlc.arg(before);
