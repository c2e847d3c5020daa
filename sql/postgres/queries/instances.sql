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

-- name: WakeNotify :exec
-- Tells every member listening on the wake channel that topic has news.
SELECT pg_notify('faucet_wake', @topic::text);

-- name: WakeListen :exec
LISTEN faucet_wake;
