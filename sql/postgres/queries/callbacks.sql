-- name: CallbackClaim :many
-- Claims the due pending deliveries that nobody holds (never claimed, given
-- back for a retry, or held by a member whose lease lapsed) and that have
-- attempts left, in one statement; rows another claimer holds are skipped,
-- so concurrent claimers never return the same delivery. Each comes back
-- with its run.
WITH picked AS (
    SELECT p.delivery_id FROM faucet_callback_deliveries p
    WHERE p.state = 'pending' AND p.next_attempt_at <= @now::timestamptz
      AND (p.lease_expires_at IS NULL OR p.lease_expires_at < @now::timestamptz)
      AND p.attempts < @max_attempts::integer
    ORDER BY p.next_attempt_at, p.delivery_id
    LIMIT @claim_limit
    FOR UPDATE SKIP LOCKED
)
UPDATE faucet_callback_deliveries d SET
    owner = @owner::text,
    lease_expires_at = @lease_expires_at::timestamptz,
    attempts = d.attempts + 1,
    last_attempt_at = @now::timestamptz
FROM faucet_runs r
WHERE d.delivery_id = ANY (ARRAY(SELECT picked.delivery_id FROM picked)) AND d.state = 'pending'
  AND r.run_id = d.run_id
RETURNING d.delivery_id, d.run_id, d.state, d.created_at, d.next_attempt_at, d.attempts,
    d.last_attempt_at, d.last_status_code, d.last_error, d.finished_at,
    r.name, r.labels, r.status, r.submitted_at, r.started_at, r.finished_at AS run_finished_at,
    r.idempotency_key, r.attempt, r.records_written, r.error, r.submission, r.invocations,
    r.template_id, r.template_version;

-- name: CallbackExhaust :execrows
-- Fails the pending deliveries whose last claim lapsed with no attempt left:
-- their deliverer stopped before it could report the last answer.
UPDATE faucet_callback_deliveries SET
    state = 'failed',
    owner = NULL,
    lease_expires_at = NULL,
    last_error = @error::text,
    finished_at = @now::timestamptz
WHERE state = 'pending' AND attempts >= @max_attempts::integer
  AND (lease_expires_at IS NULL OR lease_expires_at < @now::timestamptz);

-- name: CallbackSettle :execrows
-- Records the outcome of an attempt, only while the caller still holds the
-- claim it made (a peer that took a lapsed claim over holds a newer one).
UPDATE faucet_callback_deliveries SET
    state = @state::text,
    owner = NULL,
    lease_expires_at = NULL,
    next_attempt_at = @next_attempt_at::timestamptz,
    last_status_code = sqlc.narg(status_code)::integer,
    last_error = sqlc.narg(error)::text,
    finished_at = sqlc.narg(finished_at)::timestamptz
WHERE delivery_id = @delivery_id AND owner = @owner::text AND attempts = @attempt::integer AND state = 'pending';

-- name: CallbackRelease :execrows
-- Gives back every held claim, whoever holds it.
UPDATE faucet_callback_deliveries SET owner = NULL, lease_expires_at = NULL
WHERE state = 'pending' AND owner IS NOT NULL;

-- name: CallbackListRun :many
SELECT * FROM faucet_callback_deliveries WHERE run_id = @run_id ORDER BY created_at, delivery_id;
