-- name: IdempotencyTakeover :execrows
UPDATE faucet_idempotency_claims
SET run_id = sqlc.arg(run_id), fingerprint = sqlc.arg(fingerprint), claimed_at = sqlc.arg(now)
WHERE key = sqlc.arg(key) AND claimed_at < sqlc.arg(expired_before);

-- name: IdempotencyInsert :execrows
INSERT INTO faucet_idempotency_claims (key, run_id, fingerprint, claimed_at)
VALUES (sqlc.arg(key), sqlc.arg(run_id), sqlc.arg(fingerprint), sqlc.arg(now))
ON CONFLICT (key) DO NOTHING;

-- name: IdempotencyGet :one
SELECT run_id, fingerprint FROM faucet_idempotency_claims WHERE key = sqlc.arg(key);

-- name: IdempotencyRelease :execrows
DELETE FROM faucet_idempotency_claims WHERE run_id = sqlc.arg(run_id);

-- name: IdempotencyPurge :execrows
DELETE FROM faucet_idempotency_claims WHERE claimed_at < sqlc.arg(before);
