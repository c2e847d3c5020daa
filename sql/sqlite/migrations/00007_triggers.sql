-- The state of the triggers a server fires by itself (--triggers: schedule
-- and object_arrival), kept in the history so that every member of a
-- cluster, and every restart, sees the same state.
--
-- An arm row says since when a trigger has been watched with its current
-- settings (their fingerprint): a schedule catches up on a slot it missed
-- only when the slot is not older than that, and object_arrival's start_at
-- now leaves out the files modified before it. The first member to arm a
-- trigger sets it; a change of settings re-arms it.
--
-- A fire row is one slot of a schedule or one version of a file, and it is
-- written in the same transaction as the run it started: the primary key
-- lets one writer win, so a slot or a file starts exactly one run whatever
-- the number of members racing for it, and a run never exists without its
-- row nor the row without its run. fire_key is the slot (RFC 3339, UTC) or
-- a digest of the file's path, modification time and size; subject is what
-- a person reads (the slot in the trigger's time zone, the path). A run may
-- be deleted, or purged, without its fire row: the slot or file stays
-- fired (no foreign key). Instants are microseconds since the Unix epoch.

-- +goose Up
CREATE TABLE faucet_trigger_arms (
    trigger_name TEXT    NOT NULL PRIMARY KEY,
    fingerprint  TEXT    NOT NULL,
    armed_at     INTEGER NOT NULL
) STRICT;

CREATE TABLE faucet_trigger_fires (
    trigger_name TEXT    NOT NULL,
    fire_key     TEXT    NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('schedule', 'object_arrival')),
    subject      TEXT    NOT NULL,
    event_at     INTEGER NOT NULL,
    run_id       TEXT    NOT NULL,
    fired_at     INTEGER NOT NULL,
    PRIMARY KEY (trigger_name, fire_key)
) STRICT, WITHOUT ROWID;
-- A schedule's newest slot, and the pruning of older ones.
CREATE INDEX faucet_trigger_fires_event_idx ON faucet_trigger_fires (trigger_name, event_at);

-- +goose Down
DROP TABLE faucet_trigger_fires;
DROP TABLE faucet_trigger_arms;
