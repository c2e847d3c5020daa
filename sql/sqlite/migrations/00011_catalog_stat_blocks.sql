-- A batch's volume points of a dataset stored as one block (a JSON array,
-- oldest first) instead of a row each in a ring of slots: a trivial run
-- wrote two slot rows and two run-index entries, the catalog's largest
-- cost per run, where a block costs one row per dataset and batch. A
-- block's points are numbered last_seq - points + 1 … last_seq in the
-- dataset's count (stats_recorded); a dataset keeps the blocks holding
-- any of its newest 500, and readers leave out the older points of the
-- oldest one. A retried batch is known by its id (faucet_catalog_batches,
-- kept an hour), which replaces the run index: it records nothing twice.

-- +goose Up
CREATE TABLE faucet_catalog_stat_blocks (
    dataset_id TEXT    NOT NULL REFERENCES faucet_catalog_datasets (id),
    last_seq   INTEGER NOT NULL CHECK (last_seq >= 1),
    points     INTEGER NOT NULL CHECK (points >= 1),
    body       TEXT    NOT NULL CHECK (json_valid(body)),
    PRIMARY KEY (dataset_id, last_seq)
) STRICT;

CREATE TABLE faucet_catalog_batches (
    batch_id    TEXT    NOT NULL PRIMARY KEY,
    recorded_at INTEGER NOT NULL
) STRICT;

CREATE INDEX faucet_catalog_batches_recorded_idx ON faucet_catalog_batches (recorded_at);

-- Each point a block of its own.
INSERT INTO faucet_catalog_stat_blocks (dataset_id, last_seq, points, body)
SELECT dataset_id, seq, 1, json_array(json_object('run', run_id, 'row', row_id, 'role', role, 'at', recorded_at,
    'status', status, 'records', records, 'bytes', bytes, 'ms', duration_ms))
FROM faucet_catalog_stat_slots;

DROP TABLE faucet_catalog_stat_slots;

-- +goose Down
CREATE TABLE faucet_catalog_stat_slots (
    dataset_id  TEXT    NOT NULL REFERENCES faucet_catalog_datasets (id),
    slot        INTEGER NOT NULL CHECK (slot >= 0),
    seq         INTEGER NOT NULL CHECK (seq >= 1),
    run_id      TEXT    NOT NULL,
    row_id      TEXT    NOT NULL,
    role        TEXT    NOT NULL CHECK (role IN ('source', 'sink')),
    recorded_at INTEGER NOT NULL,
    status      TEXT    NOT NULL,
    records     INTEGER NOT NULL,
    bytes       INTEGER,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, slot)
) STRICT, WITHOUT ROWID;

CREATE INDEX faucet_catalog_stat_slots_run_idx ON faucet_catalog_stat_slots (run_id, row_id);

-- The newest 500 points of each dataset, each in its slot.
INSERT INTO faucet_catalog_stat_slots (dataset_id, slot, seq, run_id, row_id, role, recorded_at, status, records, bytes, duration_ms)
SELECT p.dataset_id, (p.seq - 1) % 500, p.seq, json_extract(p.point, '$.run'), json_extract(p.point, '$.row'),
    json_extract(p.point, '$.role'), json_extract(p.point, '$.at'), json_extract(p.point, '$.status'),
    json_extract(p.point, '$.records'), json_extract(p.point, '$.bytes'), json_extract(p.point, '$.ms')
FROM (
    SELECT b.dataset_id, b.last_seq - b.points + 1 + CAST(j.key AS INTEGER) AS seq, j.value AS point
    FROM faucet_catalog_stat_blocks b, json_each(b.body) j
) p
JOIN faucet_catalog_datasets d ON d.id = p.dataset_id
WHERE p.seq > d.stats_recorded - 500;

DROP TABLE faucet_catalog_batches;
DROP TABLE faucet_catalog_stat_blocks;
