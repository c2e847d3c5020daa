-- Each fact of a run is stored once. The columns already held every field
-- that changes over a run's life; the record document kept a copy of each
-- that every statement patched in step. It becomes the submission, what
-- never changes after submit (config body and format, doctor report,
-- timeout, clock, concurrency, callback); the invocation results get a
-- column of their own, written once when the run finishes; elapsed_secs is
-- no longer stored but derived from started_at and finished_at.

-- +goose Up
ALTER TABLE faucet_runs RENAME COLUMN record TO submission;
ALTER TABLE faucet_runs ADD COLUMN invocations jsonb
    CHECK (invocations IS NULL OR jsonb_typeof(invocations) = 'array');
UPDATE faucet_runs SET
    invocations = CASE
        WHEN jsonb_typeof(submission -> 'invocations') = 'array'
         AND jsonb_array_length(submission -> 'invocations') > 0
        THEN submission -> 'invocations' END,
    submission = submission - ARRAY[
        'run_id', 'name', 'labels', 'status', 'submitted_at', 'started_at', 'finished_at',
        'elapsed_secs', 'records_written', 'invocations', 'error', 'idempotency_key', 'attempt'];

-- +goose Down
-- The document is whole again: the columns' values (timestamps rendered in
-- UTC) and elapsed_secs from the timestamps, exact to the microsecond.
SET LOCAL timezone = 'UTC';
UPDATE faucet_runs SET submission = submission || jsonb_build_object(
    'run_id', run_id,
    'name', name,
    'labels', labels,
    'status', status,
    'submitted_at', submitted_at,
    'started_at', started_at,
    'finished_at', finished_at,
    'elapsed_secs', extract(epoch FROM finished_at - started_at),
    'records_written', records_written,
    'invocations', COALESCE(invocations, '[]'::jsonb),
    'error', error,
    'idempotency_key', idempotency_key,
    'attempt', attempt);
ALTER TABLE faucet_runs DROP COLUMN invocations;
ALTER TABLE faucet_runs RENAME COLUMN submission TO record;
