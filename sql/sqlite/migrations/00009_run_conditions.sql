-- The conditions SQLite evaluates on every write of a run (the partial
-- indexes' WHERE and the callback triggers' WHEN) spelled as comparisons
-- joined by OR instead of IN lists. SQLite builds a temporary index for an
-- IN list of more than two constants each time a statement runs, and the
-- insert and the terminal update of a run evaluated several: they cost more
-- than the writes themselves. Same rows, same deliveries; the queries that
-- use the partial indexes spell their condition the same way, so SQLite
-- still sees that the index covers them.

-- +goose Up
DROP INDEX faucet_runs_owner_idx;
CREATE INDEX faucet_runs_owner_idx ON faucet_runs (owner)
WHERE status = 'pending' OR status = 'queued' OR status = 'running' OR status = 'sharded';
DROP INDEX faucet_runs_finished_idx;
CREATE INDEX faucet_runs_finished_idx ON faucet_runs (finished_at)
WHERE status = 'completed' OR status = 'failed' OR status = 'cancelled';
DROP TRIGGER faucet_runs_callback_update;
DROP TRIGGER faucet_runs_callback_insert;

-- +goose StatementBegin
CREATE TRIGGER faucet_runs_callback_update AFTER UPDATE OF status ON faucet_runs
WHEN (NEW.status = 'completed' OR NEW.status = 'failed' OR NEW.status = 'cancelled')
    AND NOT (OLD.status = 'completed' OR OLD.status = 'failed' OR OLD.status = 'cancelled')
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
WHEN (NEW.status = 'completed' OR NEW.status = 'failed' OR NEW.status = 'cancelled')
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
DROP INDEX faucet_runs_owner_idx;
CREATE INDEX faucet_runs_owner_idx ON faucet_runs (owner) WHERE status IN ('pending', 'queued', 'running', 'sharded');
DROP INDEX faucet_runs_finished_idx;
CREATE INDEX faucet_runs_finished_idx ON faucet_runs (finished_at) WHERE status IN ('completed', 'failed', 'cancelled');
DROP TRIGGER faucet_runs_callback_update;
DROP TRIGGER faucet_runs_callback_insert;

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
