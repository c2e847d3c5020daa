-- name: TriggerArm :one
-- Arms a trigger: the first arm, or one with other settings, stamps
-- armed_at, and an arm with the settings already stored keeps the stamp. It
-- returns the stamp in force.
INSERT INTO faucet_trigger_arms (trigger_name, fingerprint, armed_at)
VALUES (sqlc.arg(trigger_name), sqlc.arg(fingerprint), sqlc.arg(now))
ON CONFLICT (trigger_name) DO UPDATE SET
    armed_at = CASE WHEN faucet_trigger_arms.fingerprint = excluded.fingerprint
        THEN faucet_trigger_arms.armed_at ELSE excluded.armed_at END,
    fingerprint = excluded.fingerprint
RETURNING armed_at;

-- name: TriggerFireInsert :execrows
-- Claims a slot or a file for one run: 0 rows when it was claimed before.
INSERT INTO faucet_trigger_fires (trigger_name, fire_key, kind, subject, event_at, run_id, fired_at)
VALUES (sqlc.arg(trigger_name), sqlc.arg(fire_key), sqlc.arg(kind), sqlc.arg(subject), sqlc.arg(event_at),
        sqlc.arg(run_id), sqlc.arg(fired_at))
ON CONFLICT (trigger_name, fire_key) DO NOTHING;

-- name: TriggerFireNewest :one
-- The newest event (a schedule's last slot) a trigger fired for.
SELECT event_at FROM faucet_trigger_fires
WHERE trigger_name = sqlc.arg(trigger_name)
ORDER BY event_at DESC
LIMIT 1;

-- name: TriggerFiresKnown :many
-- Which of keys (a JSON array of strings) a trigger fired already.
SELECT fire_key FROM faucet_trigger_fires
WHERE trigger_name = sqlc.arg(trigger_name)
  AND fire_key IN (SELECT value FROM json_each(sqlc.arg(keys)));

-- name: TriggerFiresPrune :execrows
-- Deletes a trigger's fires for events before the cutoff, never its newest.
DELETE FROM faucet_trigger_fires AS f
WHERE f.trigger_name = sqlc.arg(trigger_name) AND f.event_at < sqlc.arg(before)
  AND f.event_at < (SELECT max(n.event_at) FROM faucet_trigger_fires AS n WHERE n.trigger_name = sqlc.arg(trigger_name));
