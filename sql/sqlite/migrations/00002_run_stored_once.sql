-- Each fact of a run is stored once. The columns already held every field
-- that changes over a run's life; the record document kept a copy of each
-- that every statement patched in step. It becomes the submission, what
-- never changes after submit (config body and format, doctor report,
-- timeout, clock, concurrency, callback); the invocation results get a
-- column of their own, written once when the run finishes; elapsed_secs is
-- no longer stored but derived from started_at and finished_at.

-- +goose Up
ALTER TABLE faucet_runs RENAME COLUMN record TO submission;
ALTER TABLE faucet_runs ADD COLUMN invocations TEXT
    CHECK (invocations IS NULL OR json_type(invocations) = 'array');
UPDATE faucet_runs SET
    invocations = CASE WHEN json_array_length(submission, '$.invocations') > 0 THEN submission -> '$.invocations' END,
    submission = json_remove(submission,
        '$.run_id', '$.name', '$.labels', '$.status', '$.submitted_at', '$.started_at', '$.finished_at',
        '$.elapsed_secs', '$.records_written', '$.invocations', '$.error', '$.idempotency_key', '$.attempt');

-- +goose Down
-- The document is whole again: the columns' values, timestamps written the
-- way encoding/json writes a time.Time (RFC 3339, UTC, trailing zeros of the
-- fraction dropped), and elapsed_secs from the timestamps.
UPDATE faucet_runs SET submission = json_set(submission,
    '$.run_id', run_id,
    '$.name', name,
    '$.labels', json(labels),
    '$.status', status,
    '$.submitted_at', strftime('%Y-%m-%dT%H:%M:%S', submitted_at / 1000000, 'unixepoch')
        || CASE WHEN submitted_at % 1000000 = 0 THEN '' ELSE rtrim(printf('.%06d', submitted_at % 1000000), '0') END || 'Z',
    '$.started_at', strftime('%Y-%m-%dT%H:%M:%S', started_at / 1000000, 'unixepoch')
        || CASE WHEN started_at % 1000000 = 0 THEN '' ELSE rtrim(printf('.%06d', started_at % 1000000), '0') END || 'Z',
    '$.finished_at', strftime('%Y-%m-%dT%H:%M:%S', finished_at / 1000000, 'unixepoch')
        || CASE WHEN finished_at % 1000000 = 0 THEN '' ELSE rtrim(printf('.%06d', finished_at % 1000000), '0') END || 'Z',
    '$.elapsed_secs', (finished_at - started_at) / 1e6,
    '$.records_written', records_written,
    '$.invocations', json(coalesce(invocations, '[]')),
    '$.error', error,
    '$.idempotency_key', idempotency_key,
    '$.attempt', attempt);
ALTER TABLE faucet_runs DROP COLUMN invocations;
ALTER TABLE faucet_runs RENAME COLUMN submission TO record;
