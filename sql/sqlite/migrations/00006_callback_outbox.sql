-- The outbox of completion callbacks: one delivery row per run that reaches
-- a terminal state with a callback subscribed to that state, written by the
-- database itself in the transaction of the transition.
--
-- A trigger rather than a statement per transition: a run becomes terminal
-- in many places (a finalize, a cancel of a pending run, a sharded parent's
-- finalize, crash recovery, a reclaim that poisons a run), and a row written
-- by the transition itself can be missed by none of them, present or
-- future. The unique run_id makes a second transition of the same run (an
-- unfenced rewrite of a terminal record) write no second row.
--
-- The callback's `on` filter is applied here, once: a missing or empty list
-- subscribes to every terminal state. The body is not stored: it is built
-- from the terminal run record, which no longer changes, by the process that
-- delivers it, so every attempt sends the same bytes.
--
-- Claims carry a lease (owner, lease_expires_at) like runs; attempts counts
-- the claims, so a target that kills its deliverer is still tried a bounded
-- number of times. Timestamps are INTEGER microseconds, as everywhere.

-- +goose Up
CREATE TABLE faucet_callback_deliveries (
    delivery_id      TEXT    NOT NULL PRIMARY KEY,
    run_id           TEXT    NOT NULL UNIQUE REFERENCES faucet_runs (run_id) ON DELETE CASCADE,
    state            TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    created_at       INTEGER NOT NULL,
    next_attempt_at  INTEGER NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    owner            TEXT,
    lease_expires_at INTEGER,
    last_attempt_at  INTEGER,
    last_status_code INTEGER,
    last_error       TEXT,
    finished_at      INTEGER
) STRICT;
-- Claiming: the pending rows due first.
CREATE INDEX faucet_callback_deliveries_due_idx ON faucet_callback_deliveries (next_attempt_at, delivery_id)
    WHERE state = 'pending';

-- The delivery id is a random (version 4) UUID, as Postgres' gen_random_uuid
-- writes it.
-- +goose StatementBegin
CREATE TRIGGER faucet_runs_callback_update AFTER UPDATE OF status ON faucet_runs
WHEN NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status NOT IN ('completed', 'failed', 'cancelled')
    AND json_type(NEW.submission, '$.callback') = 'object'
    AND (COALESCE(json_array_length(NEW.submission, '$.callback.on'), 0) = 0
         OR EXISTS (SELECT 1 FROM json_each(NEW.submission, '$.callback.on') AS s WHERE s.value = NEW.status))
BEGIN
    INSERT INTO faucet_callback_deliveries (delivery_id, run_id, created_at, next_attempt_at)
    VALUES (
        lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
            || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
        NEW.run_id, COALESCE(NEW.finished_at, NEW.submitted_at), COALESCE(NEW.finished_at, NEW.submitted_at))
    ON CONFLICT (run_id) DO NOTHING;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER faucet_runs_callback_insert AFTER INSERT ON faucet_runs
WHEN NEW.status IN ('completed', 'failed', 'cancelled')
    AND json_type(NEW.submission, '$.callback') = 'object'
    AND (COALESCE(json_array_length(NEW.submission, '$.callback.on'), 0) = 0
         OR EXISTS (SELECT 1 FROM json_each(NEW.submission, '$.callback.on') AS s WHERE s.value = NEW.status))
BEGIN
    INSERT INTO faucet_callback_deliveries (delivery_id, run_id, created_at, next_attempt_at)
    VALUES (
        lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
            || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
        NEW.run_id, COALESCE(NEW.finished_at, NEW.submitted_at), COALESCE(NEW.finished_at, NEW.submitted_at))
    ON CONFLICT (run_id) DO NOTHING;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER faucet_runs_callback_insert;
DROP TRIGGER faucet_runs_callback_update;
DROP TABLE faucet_callback_deliveries;
