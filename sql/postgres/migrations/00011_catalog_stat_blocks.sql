-- A batch's volume points of a dataset stored as one block (a JSON array,
-- oldest first) instead of a row each in a ring of slots: a trivial run
-- wrote two slot rows and two run-index entries, the catalog's largest
-- cost per run, where a block costs one row per dataset and batch. A
-- block's points are numbered last_seq - points + 1 … last_seq in the
-- dataset's count (stats_recorded); a dataset keeps the blocks holding
-- any of its newest 500, and readers leave out the older points of the
-- oldest one. A retried batch is known by its id (faucet_catalog_batches,
-- kept an hour), which replaces the run index: it records nothing twice.
-- A point's time is in microseconds since the epoch, as in SQLite.

-- +goose Up
CREATE TABLE faucet_catalog_stat_blocks (
    dataset_id text   NOT NULL REFERENCES faucet_catalog_datasets (id),
    last_seq   bigint NOT NULL CHECK (last_seq >= 1),
    points     integer NOT NULL CHECK (points >= 1),
    body       json   NOT NULL,
    PRIMARY KEY (dataset_id, last_seq)
);

CREATE TABLE faucet_catalog_batches (
    batch_id    text        NOT NULL PRIMARY KEY,
    recorded_at timestamptz NOT NULL
);

CREATE INDEX faucet_catalog_batches_recorded_idx ON faucet_catalog_batches (recorded_at);

-- Each point a block of its own.
INSERT INTO faucet_catalog_stat_blocks (dataset_id, last_seq, points, body)
SELECT dataset_id, seq, 1, json_build_array(json_build_object('run', run_id, 'row', row_id, 'role', role,
    'at', (extract(epoch FROM recorded_at) * 1000000)::bigint, 'status', status, 'records', records,
    'bytes', bytes, 'ms', duration_ms))
FROM faucet_catalog_stat_slots;

DROP TABLE faucet_catalog_stat_slots;

-- +goose Down
CREATE TABLE faucet_catalog_stat_slots (
    dataset_id  text        NOT NULL REFERENCES faucet_catalog_datasets (id),
    slot        integer     NOT NULL CHECK (slot >= 0),
    seq         bigint      NOT NULL CHECK (seq >= 1),
    run_id      text        NOT NULL,
    row_id      text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('source', 'sink')),
    recorded_at timestamptz NOT NULL,
    status      text        NOT NULL,
    records     bigint      NOT NULL,
    bytes       bigint,
    duration_ms bigint      NOT NULL,
    PRIMARY KEY (dataset_id, slot)
);

CREATE INDEX faucet_catalog_stat_slots_run_idx ON faucet_catalog_stat_slots (run_id, row_id);

-- The newest 500 points of each dataset, each in its slot.
INSERT INTO faucet_catalog_stat_slots (dataset_id, slot, seq, run_id, row_id, role, recorded_at, status, records, bytes, duration_ms)
SELECT p.dataset_id, (p.seq - 1) % 500, p.seq, p.point->>'run', p.point->>'row', p.point->>'role',
    timestamptz 'epoch' + (p.point->>'at')::bigint * interval '1 microsecond', p.point->>'status', (p.point->>'records')::bigint,
    (p.point->>'bytes')::bigint, (p.point->>'ms')::bigint
FROM (
    SELECT b.dataset_id, b.last_seq - b.points + j.n AS seq, j.point
    FROM faucet_catalog_stat_blocks b, json_array_elements(b.body) WITH ORDINALITY AS j (point, n)
) p
JOIN faucet_catalog_datasets d ON d.id = p.dataset_id
WHERE p.seq > d.stats_recorded - 500;

DROP TABLE faucet_catalog_batches;
DROP TABLE faucet_catalog_stat_blocks;
