-- The data movement catalog: every dataset a run read or wrote, its schema
-- timeline, its per-run volume, the lineage edges between datasets, and the
-- last config snapshots of each pipeline. It accumulates across runs and is
-- never purged by retention: deleting a run keeps what it recorded, so no
-- column here refers to faucet_runs.
--
-- Each fact is stored once: a dataset's current schema is its newest
-- version's, an edge's URIs are its datasets', a version's diff is computed
-- from it and the version before when read.

-- +goose Up
CREATE TABLE faucet_catalog_datasets (
    -- id is the first 16 hex digits of the sha256 of uri.
    id            text        NOT NULL PRIMARY KEY,
    uri           text        NOT NULL,
    -- uri_folded is uri case-folded by faucet (not by the database, whose
    -- folding depends on its locale), for the case-insensitive search.
    uri_folded    text        NOT NULL,
    kind          text        NOT NULL,
    as_source     boolean     NOT NULL DEFAULT false,
    as_sink       boolean     NOT NULL DEFAULT false,
    first_seen    timestamptz NOT NULL,
    last_seen     timestamptz NOT NULL,
    last_run_id   text        NOT NULL,
    pipeline      text        NOT NULL,
    last_records  bigint      NOT NULL,
    total_records bigint      NOT NULL,
    runs          bigint      NOT NULL
);

-- The listing, newest activity first, walked from its keyset cursor down
-- until a page of rows passed the kind and uri filters: one statement with
-- optional filters cannot choose an index per filter.
CREATE INDEX faucet_catalog_datasets_seen_idx ON faucet_catalog_datasets (last_seen, id);

-- One row per schema a dataset was seen with, appended only when its hash
-- differs from the newest row's.
CREATE TABLE faucet_catalog_schema_versions (
    dataset_id  text        NOT NULL REFERENCES faucet_catalog_datasets (id),
    version     integer     NOT NULL CHECK (version >= 1),
    recorded_at timestamptz NOT NULL,
    run_id      text        NOT NULL,
    -- schema is the JSON array of columns {name, type, nullable, db_type}.
    schema      jsonb       NOT NULL CHECK (jsonb_typeof(schema) = 'array'),
    schema_hash text        NOT NULL,
    PRIMARY KEY (dataset_id, version)
);

-- One row per source → sink pair of datasets, upserted by every run that
-- moved records along it.
CREATE TABLE faucet_catalog_edges (
    src_id       text        NOT NULL REFERENCES faucet_catalog_datasets (id),
    dst_id       text        NOT NULL REFERENCES faucet_catalog_datasets (id),
    pipeline     text        NOT NULL,
    row_id       text        NOT NULL,
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    last_run_id  text        NOT NULL,
    runs         bigint      NOT NULL,
    last_records bigint      NOT NULL,
    PRIMARY KEY (src_id, dst_id)
);

CREATE INDEX faucet_catalog_edges_dst_idx ON faucet_catalog_edges (dst_id, src_id);
CREATE INDEX faucet_catalog_edges_seen_idx ON faucet_catalog_edges (last_seen, src_id, dst_id);

-- Per-run volume points of a dataset, the newest 500 recorded kept. The
-- unique key keeps an invocation's row from being recorded twice.
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

-- A detail read's newest points and the cap's trim, both in recording
-- order (the unique key, run first, finds what a run recorded). Every index
-- is paid for by each row a run records and each the cap drops.
CREATE INDEX faucet_catalog_stats_seq_idx ON faucet_catalog_stats (dataset_id, seq);

-- The redacted, resolved config of a pipeline's last run, and of the run
-- before it, for faucet plan --diff.
CREATE TABLE faucet_config_snapshots (
    pipeline             text        NOT NULL PRIMARY KEY,
    recorded_at          timestamptz NOT NULL,
    run_id               text        NOT NULL,
    body                 jsonb       NOT NULL CHECK (jsonb_typeof(body) = 'object'),
    previous_recorded_at timestamptz,
    previous_run_id      text,
    previous_body        jsonb CHECK (previous_body IS NULL OR jsonb_typeof(previous_body) = 'object')
);

-- What a completed shard read and wrote, kept with its result for the one
-- catalog record of its run, which whoever finalizes the run writes.
ALTER TABLE faucet_shards ADD COLUMN lineage jsonb CHECK (lineage IS NULL OR jsonb_typeof(lineage) = 'object');

-- +goose Down
ALTER TABLE faucet_shards DROP COLUMN lineage;
DROP TABLE faucet_config_snapshots;
DROP TABLE faucet_catalog_stats;
DROP TABLE faucet_catalog_edges;
DROP TABLE faucet_catalog_schema_versions;
DROP TABLE faucet_catalog_datasets;
