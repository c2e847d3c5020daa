-- A dataset's volume points kept in a ring of 500 slots, each new point
-- overwriting the oldest in place, instead of rows appended and then
-- trimmed: the trim deleted as many rows as a run recorded, from the
-- other end of the table and of each of its indexes, and found them by
-- walking 500 index entries per dataset and batch. A dataset counts the
-- points it was ever given (stats_recorded); a point's seq is that count
-- when it came, and its slot is (seq - 1) modulo 500. The run index finds
-- what a run recorded already, so a retried batch records nothing twice.

-- +goose Up
ALTER TABLE faucet_catalog_datasets ADD COLUMN stats_recorded bigint NOT NULL DEFAULT 0;

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

INSERT INTO faucet_catalog_stat_slots (dataset_id, slot, seq, run_id, row_id, role, recorded_at, status, records, bytes, duration_ms)
SELECT dataset_id, (n - 1) % 500, n, run_id, row_id, role, recorded_at, status, records, bytes, duration_ms
FROM (
    SELECT s.*, row_number() OVER (PARTITION BY s.dataset_id ORDER BY s.seq) AS n,
        count(*) OVER (PARTITION BY s.dataset_id) AS total
    FROM faucet_catalog_stats s
) ranked
WHERE n > total - 500;

UPDATE faucet_catalog_datasets d SET stats_recorded = (
    SELECT count(*) FROM faucet_catalog_stats s WHERE s.dataset_id = d.id
);

DROP TABLE faucet_catalog_stats;

-- +goose Down
CREATE TABLE faucet_catalog_stats (
    seq         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dataset_id  text        NOT NULL REFERENCES faucet_catalog_datasets (id),
    run_id      text        NOT NULL,
    row_id      text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('source', 'sink')),
    recorded_at timestamptz NOT NULL,
    status      text        NOT NULL,
    records     bigint      NOT NULL,
    bytes       bigint,
    duration_ms bigint      NOT NULL,
    UNIQUE (run_id, row_id, dataset_id, role)
);

CREATE INDEX faucet_catalog_stats_seq_idx ON faucet_catalog_stats (dataset_id, seq);

-- Each dataset's points in the order they were recorded.
INSERT INTO faucet_catalog_stats (dataset_id, run_id, row_id, role, recorded_at, status, records, bytes, duration_ms)
SELECT dataset_id, run_id, row_id, role, recorded_at, status, records, bytes, duration_ms
FROM faucet_catalog_stat_slots ORDER BY seq, dataset_id
ON CONFLICT (run_id, row_id, dataset_id, role) DO NOTHING;

DROP TABLE faucet_catalog_stat_slots;
ALTER TABLE faucet_catalog_datasets DROP COLUMN stats_recorded;
