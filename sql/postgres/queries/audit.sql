-- name: AuditInsert :exec
INSERT INTO faucet_audit (id, ts, principal, role, action, run_id, config_fingerprint, source_ip, result)
VALUES (@id, @ts, @principal, @role, @action, @run_id, @config_fingerprint, @source_ip, @result);

-- name: AuditList :many
SELECT * FROM faucet_audit
WHERE (sqlc.narg(principal)::text IS NULL OR principal = sqlc.narg(principal)::text)
  AND (sqlc.narg(action)::text IS NULL OR action = sqlc.narg(action)::text)
  AND (sqlc.narg(since)::timestamptz IS NULL OR ts >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR ts <= sqlc.narg(until)::timestamptz)
ORDER BY ts DESC, id DESC
LIMIT @page_limit;

-- name: AuditPurge :execrows
DELETE FROM faucet_audit WHERE ts < @before::timestamptz;
