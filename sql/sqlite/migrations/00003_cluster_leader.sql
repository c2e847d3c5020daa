-- The cluster's leader lease: the one member that runs the sweeps every
-- member would otherwise repeat (requeueing the work of dead members,
-- finalizing sharded runs whose shards all ended, purging expired history).
-- A single row, held by leader_id until expires_at; a member renews it while
-- it lives, and once it lapses the first member to ask takes it over.

-- +goose Up
CREATE TABLE faucet_leader (
    name       TEXT    NOT NULL PRIMARY KEY DEFAULT 'default' CHECK (name = 'default'),
    leader_id  TEXT    NOT NULL CHECK (leader_id <> ''),
    elected_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

-- +goose Down
DROP TABLE faucet_leader;
