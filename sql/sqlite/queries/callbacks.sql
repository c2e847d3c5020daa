-- CallbackClaim claims the due pending deliveries that nobody holds (never
-- claimed, given back for a retry, or held by a process whose lease
-- lapsed) and that have attempts left, in one statement, exclusive across
-- processes like RunClaimPending.
-- name: CallbackClaim :many
UPDATE faucet_callback_deliveries
SET owner = sqlc.arg(owner),
    lease_expires_at = sqlc.arg(lease_expires_at),
    attempts = attempts + 1,
    last_attempt_at = sqlc.arg(now)
WHERE state = 'pending'
  AND delivery_id IN (
      SELECT p.delivery_id FROM faucet_callback_deliveries p
      WHERE p.state = 'pending' AND p.next_attempt_at <= sqlc.arg(now)
        AND (p.lease_expires_at IS NULL OR p.lease_expires_at < sqlc.arg(now))
        AND p.attempts < sqlc.arg(max_attempts)
      ORDER BY p.next_attempt_at, p.delivery_id
      LIMIT sqlc.arg(row_limit))
RETURNING *;

-- CallbackExhaust fails the pending deliveries whose last claim lapsed with
-- no attempt left: their deliverer stopped before it could report the last
-- answer.
-- name: CallbackExhaust :execrows
UPDATE faucet_callback_deliveries
SET state = 'failed', owner = NULL, lease_expires_at = NULL,
    last_error = sqlc.arg(error), finished_at = sqlc.arg(now)
WHERE state = 'pending' AND attempts >= sqlc.arg(max_attempts)
  AND (lease_expires_at IS NULL OR lease_expires_at < sqlc.arg(now));

-- CallbackSettle records the outcome of an attempt, only while the caller
-- still holds the claim it made.
-- name: CallbackSettle :execrows
UPDATE faucet_callback_deliveries
SET state = sqlc.arg(state),
    owner = NULL,
    lease_expires_at = NULL,
    next_attempt_at = sqlc.arg(next_attempt_at),
    last_status_code = sqlc.narg(status_code),
    last_error = sqlc.narg(error),
    finished_at = sqlc.narg(finished_at)
WHERE delivery_id = sqlc.arg(delivery_id) AND owner = sqlc.arg(owner)
  AND attempts = sqlc.arg(attempt) AND state = 'pending';

-- CallbackRelease gives back every held claim, whoever holds it.
-- name: CallbackRelease :execrows
UPDATE faucet_callback_deliveries SET owner = NULL, lease_expires_at = NULL
WHERE state = 'pending' AND owner IS NOT NULL;

-- name: CallbackListRun :many
SELECT * FROM faucet_callback_deliveries WHERE run_id = sqlc.arg(run_id) ORDER BY created_at, delivery_id;
