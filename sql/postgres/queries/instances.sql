-- name: InstanceHeartbeat :exec
INSERT INTO faucet_instances (instance_id, started_at, last_heartbeat, listen, max_concurrent, in_flight, state_format)
VALUES (@instance_id, @started_at, @now, @listen, @max_concurrent, @in_flight, @state_format)
ON CONFLICT (instance_id) DO UPDATE SET
    started_at = excluded.started_at,
    last_heartbeat = excluded.last_heartbeat,
    listen = excluded.listen,
    max_concurrent = excluded.max_concurrent,
    in_flight = excluded.in_flight,
    state_format = excluded.state_format;

-- name: InstanceListLive :many
SELECT * FROM faucet_instances WHERE last_heartbeat >= @since::timestamptz ORDER BY instance_id;

-- name: InstancePurge :execrows
DELETE FROM faucet_instances WHERE last_heartbeat < @before::timestamptz;

-- The running runs and shards of every member: what each one executes.
-- name: InstanceWorkList :many
SELECT owner::text AS owner, run_id, ''::text AS shard_id, name
FROM faucet_runs
WHERE status = 'running' AND owner IS NOT NULL
UNION ALL
SELECT s.owner::text AS owner, s.run_id, s.shard_id, r.name
FROM faucet_shards s JOIN faucet_runs r ON r.run_id = s.run_id
WHERE s.status = 'running' AND s.owner IS NOT NULL
ORDER BY owner, run_id, shard_id;

-- name: WakeNotify :exec
-- Tells every member listening on the wake channel that topic has news.
SELECT pg_notify('faucet_wake', @topic::text);

-- name: WakeListen :exec
LISTEN faucet_wake;
