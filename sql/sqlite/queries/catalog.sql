-- name: CatalogBatchClaim :execrows
-- Claims a batch's id, first in its transaction: no row means the batch
-- was recorded before (a retry of a write whose commit was lost).
INSERT INTO faucet_catalog_batches (batch_id, recorded_at) VALUES (sqlc.arg(batch_id), sqlc.arg(recorded_at))
ON CONFLICT (batch_id) DO NOTHING;

-- name: CatalogBatchTrim :exec
-- Forgets the ids of batches too old to be retried.
DELETE FROM faucet_catalog_batches WHERE recorded_at < sqlc.arg(before);

-- name: CatalogDatasetUpsert :one
-- One dataset of a batch as the Store aggregated it: a statement per row,
-- which in process costs less than decoding the rows of one statement's
-- JSON. Counters add up, and the fields of the latest run are taken from
-- whichever write is newer, so concurrent recorders converge whatever
-- their order. It returns the dataset's count of volume points with the
-- batch's, which numbers the batch's block of them.
INSERT INTO faucet_catalog_datasets (id, uri, uri_folded, kind, as_source, as_sink, first_seen, last_seen,
    last_run_id, pipeline, last_records, total_records, runs, stats_recorded)
VALUES (sqlc.arg(id), sqlc.arg(uri), sqlc.arg(uri_folded), sqlc.arg(kind), sqlc.arg(as_source), sqlc.arg(as_sink),
    sqlc.arg(first_seen), sqlc.arg(last_seen), sqlc.arg(last_run_id), sqlc.arg(pipeline), sqlc.arg(last_records),
    sqlc.arg(total_records), sqlc.arg(runs), sqlc.arg(stats_recorded))
ON CONFLICT (id) DO UPDATE SET
    as_source = max(faucet_catalog_datasets.as_source, excluded.as_source),
    as_sink = max(faucet_catalog_datasets.as_sink, excluded.as_sink),
    first_seen = min(faucet_catalog_datasets.first_seen, excluded.first_seen),
    last_seen = max(faucet_catalog_datasets.last_seen, excluded.last_seen),
    kind = CASE WHEN excluded.last_seen >= faucet_catalog_datasets.last_seen THEN excluded.kind ELSE faucet_catalog_datasets.kind END,
    last_run_id = CASE WHEN excluded.last_seen >= faucet_catalog_datasets.last_seen THEN excluded.last_run_id ELSE faucet_catalog_datasets.last_run_id END,
    pipeline = CASE WHEN excluded.last_seen >= faucet_catalog_datasets.last_seen THEN excluded.pipeline ELSE faucet_catalog_datasets.pipeline END,
    last_records = CASE WHEN excluded.last_seen >= faucet_catalog_datasets.last_seen THEN excluded.last_records ELSE faucet_catalog_datasets.last_records END,
    total_records = faucet_catalog_datasets.total_records + excluded.total_records,
    runs = faucet_catalog_datasets.runs + excluded.runs,
    stats_recorded = faucet_catalog_datasets.stats_recorded + excluded.stats_recorded
RETURNING stats_recorded;

-- name: CatalogStatBlockPut :exec
-- A batch's volume points of one dataset (db.CatalogStatBlocks).
INSERT INTO faucet_catalog_stat_blocks (dataset_id, last_seq, points, body)
VALUES (sqlc.arg(dataset_id), sqlc.arg(last_seq), sqlc.arg(points), sqlc.arg(body));

-- name: CatalogStatBlockTrim :exec
-- Drops a dataset's blocks whose points have all become older than it
-- keeps with this batch: those ending above the floor before the batch
-- and at or below the floor after it.
DELETE FROM faucet_catalog_stat_blocks
WHERE dataset_id = sqlc.arg(dataset_id) AND last_seq > sqlc.arg(prev_floor) AND last_seq <= sqlc.arg(floor);

-- name: CatalogSchemaVersionAppend :execrows
-- Writes take SQLite's write lock for their whole transaction, so
-- recorders of one dataset append one after the other.
INSERT INTO faucet_catalog_schema_versions (dataset_id, version, recorded_at, run_id, schema, schema_hash)
SELECT sqlc.arg(dataset_id),
    COALESCE((SELECT max(m.version) FROM faucet_catalog_schema_versions m WHERE m.dataset_id = sqlc.arg(dataset_id)), 0) + 1,
    sqlc.arg(recorded_at), sqlc.arg(run_id), sqlc.arg(schema), sqlc.arg(schema_hash)
WHERE COALESCE((SELECT n.schema_hash FROM faucet_catalog_schema_versions n
    WHERE n.dataset_id = sqlc.arg(dataset_id) ORDER BY n.version DESC LIMIT 1), '') <> sqlc.arg(schema_hash);

-- name: CatalogEdgeUpsert :exec
INSERT INTO faucet_catalog_edges (src_id, dst_id, pipeline, row_id, first_seen, last_seen, last_run_id, runs, last_records)
VALUES (sqlc.arg(src_id), sqlc.arg(dst_id), sqlc.arg(pipeline), sqlc.arg(row_id), sqlc.arg(first_seen), sqlc.arg(last_seen),
    sqlc.arg(last_run_id), sqlc.arg(runs), sqlc.arg(last_records))
ON CONFLICT (src_id, dst_id) DO UPDATE SET
    first_seen = min(faucet_catalog_edges.first_seen, excluded.first_seen),
    last_seen = max(faucet_catalog_edges.last_seen, excluded.last_seen),
    pipeline = CASE WHEN excluded.last_seen >= faucet_catalog_edges.last_seen THEN excluded.pipeline ELSE faucet_catalog_edges.pipeline END,
    row_id = CASE WHEN excluded.last_seen >= faucet_catalog_edges.last_seen THEN excluded.row_id ELSE faucet_catalog_edges.row_id END,
    last_run_id = CASE WHEN excluded.last_seen >= faucet_catalog_edges.last_seen THEN excluded.last_run_id ELSE faucet_catalog_edges.last_run_id END,
    last_records = CASE WHEN excluded.last_seen >= faucet_catalog_edges.last_seen THEN excluded.last_records ELSE faucet_catalog_edges.last_records END,
    runs = faucet_catalog_edges.runs + excluded.runs;

-- name: CatalogDatasetList :many
SELECT d.id, d.uri, d.kind, d.as_source, d.as_sink, d.first_seen, d.last_seen, d.last_run_id, d.pipeline,
    d.last_records, d.total_records, d.runs,
    CAST(COALESCE(v.version, 0) AS INTEGER) AS schema_versions, v.schema, CAST(COALESCE(v.schema_hash, '') AS TEXT) AS schema_hash
FROM faucet_catalog_datasets d
LEFT JOIN faucet_catalog_schema_versions v ON v.dataset_id = d.id
    AND v.version = (SELECT max(n.version) FROM faucet_catalog_schema_versions n WHERE n.dataset_id = d.id)
WHERE (CAST(sqlc.narg(kind) AS TEXT) IS NULL OR d.kind = sqlc.narg(kind))
  AND (CAST(sqlc.narg(folded) AS TEXT) IS NULL OR instr(d.uri_folded, sqlc.narg(folded)) > 0)
  AND (CAST(sqlc.narg(cursor) AS TEXT) IS NULL OR d.last_seen < (SELECT c.last_seen FROM faucet_catalog_datasets c WHERE c.id = sqlc.narg(cursor))
      OR (d.last_seen = (SELECT c.last_seen FROM faucet_catalog_datasets c WHERE c.id = sqlc.narg(cursor)) AND d.id < sqlc.narg(cursor)))
ORDER BY d.last_seen DESC, d.id DESC
LIMIT sqlc.arg(row_limit);

-- name: CatalogDatasetGet :one
SELECT d.id, d.uri, d.kind, d.as_source, d.as_sink, d.first_seen, d.last_seen, d.last_run_id, d.pipeline,
    d.last_records, d.total_records, d.runs,
    CAST(COALESCE(v.version, 0) AS INTEGER) AS schema_versions, v.schema, CAST(COALESCE(v.schema_hash, '') AS TEXT) AS schema_hash
FROM faucet_catalog_datasets d
LEFT JOIN faucet_catalog_schema_versions v ON v.dataset_id = d.id
    AND v.version = (SELECT max(n.version) FROM faucet_catalog_schema_versions n WHERE n.dataset_id = d.id)
WHERE d.id = sqlc.arg(id);

-- name: CatalogDatasetExists :one
SELECT EXISTS (SELECT 1 FROM faucet_catalog_datasets WHERE id = sqlc.arg(id));

-- name: CatalogSchemaVersionList :many
-- The newest versions, newest first.
SELECT * FROM faucet_catalog_schema_versions
WHERE dataset_id = sqlc.arg(dataset_id)
ORDER BY version DESC
LIMIT sqlc.arg(row_limit);

-- name: CatalogStatBlockList :many
-- The blocks holding any of a dataset's newest points, newest first.
SELECT b.last_seq, b.points, b.body FROM faucet_catalog_stat_blocks b
WHERE b.dataset_id = sqlc.arg(dataset_id)
    AND b.last_seq > (SELECT d.stats_recorded FROM faucet_catalog_datasets d WHERE d.id = sqlc.arg(dataset_id)) - sqlc.arg(newest)
ORDER BY b.last_seq DESC;

-- name: CatalogEdgeList :many
SELECT sqlc.embed(e), s.uri AS src_uri, d.uri AS dst_uri
FROM faucet_catalog_edges e
JOIN faucet_catalog_datasets s ON s.id = e.src_id
JOIN faucet_catalog_datasets d ON d.id = e.dst_id
ORDER BY e.last_seen DESC, e.src_id, e.dst_id
LIMIT sqlc.arg(row_limit);

-- name: CatalogEdgeListTouching :many
-- The edges from or to any of the given datasets (ids, a JSON array, so
-- the statement's text and its prepared statement are the same whatever
-- their number): one level of the lineage walk.
SELECT sqlc.embed(e), s.uri AS src_uri, d.uri AS dst_uri
FROM faucet_catalog_edges e
JOIN faucet_catalog_datasets s ON s.id = e.src_id
JOIN faucet_catalog_datasets d ON d.id = e.dst_id
WHERE e.src_id IN (SELECT j.value FROM json_each(CAST(sqlc.arg(ids) AS TEXT)) j)
   OR e.dst_id IN (SELECT j.value FROM json_each(CAST(sqlc.arg(ids) AS TEXT)) j)
ORDER BY e.last_seen DESC, e.src_id, e.dst_id
LIMIT sqlc.arg(row_limit);

-- name: ConfigSnapshotUpsert :exec
-- The new snapshot becomes the latest and the latest the previous, unless
-- it is older than the latest (a slow recorder) or the same run's again.
INSERT INTO faucet_config_snapshots (pipeline, recorded_at, run_id, body)
VALUES (sqlc.arg(pipeline), sqlc.arg(recorded_at), sqlc.arg(run_id), sqlc.arg(body))
ON CONFLICT (pipeline) DO UPDATE SET
    previous_recorded_at = faucet_config_snapshots.recorded_at,
    previous_run_id = faucet_config_snapshots.run_id,
    previous_body = faucet_config_snapshots.body,
    recorded_at = excluded.recorded_at,
    run_id = excluded.run_id,
    body = excluded.body
WHERE faucet_config_snapshots.recorded_at <= excluded.recorded_at AND faucet_config_snapshots.run_id <> excluded.run_id;

-- name: ConfigSnapshotGet :one
SELECT * FROM faucet_config_snapshots WHERE pipeline = sqlc.arg(pipeline);
