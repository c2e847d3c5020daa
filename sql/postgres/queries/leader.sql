-- name: LeaderElect :one
-- Takes the lease for leader_id, or renews it when leader_id holds it. A
-- lease held by another member is taken over only once it has lapsed: no
-- row comes back while another member holds a live lease.
INSERT INTO faucet_leader (name, leader_id, elected_at, expires_at)
VALUES ('default', @leader_id::text, @now::timestamptz, @expires_at::timestamptz)
ON CONFLICT (name) DO UPDATE SET
    leader_id = excluded.leader_id,
    elected_at = CASE WHEN faucet_leader.leader_id = excluded.leader_id
        THEN faucet_leader.elected_at ELSE excluded.elected_at END,
    expires_at = excluded.expires_at
WHERE faucet_leader.leader_id = excluded.leader_id OR faucet_leader.expires_at < excluded.elected_at
RETURNING elected_at;

-- name: LeaderResign :execrows
DELETE FROM faucet_leader WHERE leader_id = @leader_id::text;
