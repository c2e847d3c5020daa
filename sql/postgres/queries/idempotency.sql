-- name: IdempotencyClaim :one
-- Claims key for run_id in one statement. A new key is inserted; an existing
-- claim older than expired_before is taken over, where the row lock of ON
-- CONFLICT makes concurrent takeovers re-check the fresh claimed_at, so one
-- wins. Otherwise the held claim is returned for the caller to compare
-- fingerprints. The held claim is read from this statement's snapshot, which
-- can predate a concurrent insert (no row comes back) or takeover (the
-- expired claim comes back): the caller retries both.
WITH claimed AS (
    INSERT INTO faucet_idempotency_claims AS c (key, run_id, fingerprint, claimed_at)
    VALUES (@key, @run_id, @fingerprint, @now)
    ON CONFLICT (key) DO UPDATE
        SET run_id = excluded.run_id, fingerprint = excluded.fingerprint, claimed_at = excluded.claimed_at
        WHERE c.claimed_at < sqlc.narg(expired_before)::timestamptz
    RETURNING c.run_id, c.fingerprint, c.claimed_at, true AS fresh
)
SELECT claimed.run_id, claimed.fingerprint, claimed.claimed_at, claimed.fresh FROM claimed
UNION ALL
SELECT held.run_id, held.fingerprint, held.claimed_at, false FROM faucet_idempotency_claims held
WHERE held.key = @key AND NOT EXISTS (SELECT 1 FROM claimed);

-- name: IdempotencyRelease :exec
DELETE FROM faucet_idempotency_claims WHERE run_id = @run_id;

-- name: IdempotencyPurge :execrows
DELETE FROM faucet_idempotency_claims WHERE claimed_at < @before::timestamptz;
