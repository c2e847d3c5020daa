-- The ledger of the files the sinks of runs created or replaced on the
-- server's disk. An entry lives from faucet's first write to its path until
-- an admin deletes the file through the API; it is kept then, marked, and a
-- new write to the path starts a new entry. Retention never deletes entries:
-- the files outlive their runs.

-- +goose Up
CREATE TABLE faucet_local_outputs (
    id               text PRIMARY KEY,
    path             text NOT NULL,
    size_bytes       bigint NOT NULL,
    run_id           text NOT NULL,
    first_run_id     text NOT NULL,
    first_written_at timestamptz NOT NULL,
    last_written_at  timestamptz NOT NULL,
    existed_before   boolean NOT NULL,
    file_id          text,
    deleted_at       timestamptz
);
-- One live entry per path; a write finds it by this index.
CREATE UNIQUE INDEX faucet_local_outputs_live_path ON faucet_local_outputs (path) WHERE deleted_at IS NULL;
CREATE INDEX faucet_local_outputs_run ON faucet_local_outputs (run_id);
CREATE INDEX faucet_local_outputs_first_run ON faucet_local_outputs (first_run_id);

-- +goose Down
DROP TABLE faucet_local_outputs;
