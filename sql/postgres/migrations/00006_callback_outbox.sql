-- The outbox of completion callbacks: one delivery row per run that reaches
-- a terminal state with a callback subscribed to that state, written by the
-- database itself in the transaction of the transition.
--
-- A trigger rather than a statement per transition: a run becomes terminal
-- in many places (a finalize, a cancel of a pending run, a sharded parent's
-- finalize, crash recovery, a reclaim that poisons a run), on any member of
-- a cluster, and a row written by the transition itself can be missed by
-- none of them, present or future. The unique run_id makes a second
-- transition of the same run (an unfenced rewrite of a terminal record)
-- write no second row.
--
-- The callback's `on` filter is applied here, once: a missing or empty list
-- subscribes to every terminal state. The body is not stored: it is built
-- from the terminal run record, which no longer changes, by the member that
-- delivers it, so every attempt sends the same bytes.
--
-- Members claim rows with a lease (owner, lease_expires_at) like runs; a
-- member that dies mid-attempt leaves a lease that lapses, and a peer takes
-- the row over. attempts counts the claims, so a target that kills its
-- deliverer is still tried a bounded number of times.

-- +goose Up
CREATE TABLE faucet_callback_deliveries (
    delivery_id      text        PRIMARY KEY,
    run_id           text        NOT NULL UNIQUE REFERENCES faucet_runs (run_id) ON DELETE CASCADE,
    state            text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    created_at       timestamptz NOT NULL,
    next_attempt_at  timestamptz NOT NULL,
    attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    owner            text,
    lease_expires_at timestamptz,
    last_attempt_at  timestamptz,
    last_status_code integer,
    last_error       text,
    finished_at      timestamptz
);
-- Claiming: the pending rows due first.
CREATE INDEX faucet_callback_deliveries_due_idx ON faucet_callback_deliveries (next_attempt_at, delivery_id)
    WHERE state = 'pending';

-- +goose StatementBegin
CREATE FUNCTION faucet_callback_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    subscribed jsonb := NEW.submission -> 'callback' -> 'on';
BEGIN
    IF jsonb_typeof(NEW.submission -> 'callback') IS DISTINCT FROM 'object' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(subscribed) = 'array' AND jsonb_array_length(subscribed) > 0 AND NOT subscribed ? NEW.status THEN
        RETURN NULL;
    END IF;
    INSERT INTO faucet_callback_deliveries (delivery_id, run_id, created_at, next_attempt_at)
    VALUES (gen_random_uuid()::text, NEW.run_id, COALESCE(NEW.finished_at, NEW.submitted_at),
            COALESCE(NEW.finished_at, NEW.submitted_at))
    ON CONFLICT (run_id) DO NOTHING;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER faucet_runs_callback_update AFTER UPDATE OF status ON faucet_runs
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled') AND OLD.status NOT IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION faucet_callback_enqueue();
CREATE TRIGGER faucet_runs_callback_insert AFTER INSERT ON faucet_runs
    FOR EACH ROW
    WHEN (NEW.status IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION faucet_callback_enqueue();

-- +goose Down
DROP TRIGGER faucet_runs_callback_insert ON faucet_runs;
DROP TRIGGER faucet_runs_callback_update ON faucet_runs;
DROP FUNCTION faucet_callback_enqueue();
DROP TABLE faucet_callback_deliveries;
