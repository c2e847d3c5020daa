-- name: CatalogBatchClaim :execrows
-- Claims a batch's id, first in its transaction: no row means the batch
-- was recorded before (a retry of a write whose commit was lost); a retry
-- racing the first attempt waits here for its outcome.
INSERT INTO faucet_catalog_batches (batch_id, recorded_at) VALUES (@batch_id, @recorded_at)
ON CONFLICT (batch_id) DO NOTHING;

-- name: CatalogBatchTrim :exec
-- Forgets the ids of batches too old to be retried.
DELETE FROM faucet_catalog_batches WHERE recorded_at < @before;

-- name: CatalogDatasetUpsert :many
-- The batch's datasets, each once, as the Store aggregated them. Counters
-- add up, and the fields of the latest run are taken from whichever
-- write is newer, so concurrent recorders converge whatever their order.
-- The rows come in id order, which is the order their locks are taken in.
-- It returns each dataset's count of volume points with the batch's,
-- which numbers the batch's block of them; the row lock keeps another
-- recorder's points from taking the same numbers.
INSERT INTO faucet_catalog_datasets AS d (id, uri, uri_folded, kind, as_source, as_sink, first_seen, last_seen,
    last_run_id, pipeline, last_records, total_records, runs, stats_recorded)
SELECT unnest(@ids::text[]), unnest(@uris::text[]), unnest(@folded::text[]), unnest(@kinds::text[]),
    unnest(@as_source::boolean[]), unnest(@as_sink::boolean[]), unnest(@first_seen::timestamptz[]), unnest(@last_seen::timestamptz[]),
    unnest(@last_run_ids::text[]), unnest(@pipelines::text[]), unnest(@last_records::bigint[]), unnest(@total_records::bigint[]), unnest(@runs::bigint[]),
    unnest(@stats_recorded::bigint[])
ORDER BY 1
ON CONFLICT (id) DO UPDATE SET
    as_source = d.as_source OR excluded.as_source,
    as_sink = d.as_sink OR excluded.as_sink,
    first_seen = LEAST(d.first_seen, excluded.first_seen),
    last_seen = GREATEST(d.last_seen, excluded.last_seen),
    kind = CASE WHEN excluded.last_seen >= d.last_seen THEN excluded.kind ELSE d.kind END,
    last_run_id = CASE WHEN excluded.last_seen >= d.last_seen THEN excluded.last_run_id ELSE d.last_run_id END,
    pipeline = CASE WHEN excluded.last_seen >= d.last_seen THEN excluded.pipeline ELSE d.pipeline END,
    last_records = CASE WHEN excluded.last_seen >= d.last_seen THEN excluded.last_records ELSE d.last_records END,
    total_records = d.total_records + excluded.total_records,
    runs = d.runs + excluded.runs,
    stats_recorded = d.stats_recorded + excluded.stats_recorded
RETURNING d.id, d.stats_recorded;

-- name: CatalogStatBlockPut :exec
-- A batch's volume points, a block per dataset (db.CatalogStatBlocks).
INSERT INTO faucet_catalog_stat_blocks (dataset_id, last_seq, points, body)
SELECT unnest(@dataset_ids::text[]), unnest(@last_seqs::bigint[]), unnest(@points::integer[]), unnest(@bodies::text[])::json;

-- name: CatalogStatBlockTrim :exec
-- Drops the blocks of these datasets whose points have all become older
-- than they keep with this batch: those ending above each dataset's floor
-- before the batch and at or below its floor after it. The lower bound
-- keeps the index scan off the dead entries of the blocks trimmed before,
-- which a scan from the dataset's first key would walk until a vacuum.
DELETE FROM faucet_catalog_stat_blocks b
USING (SELECT unnest(@dataset_ids::text[]) AS dataset_id, unnest(@prev_floors::bigint[]) AS prev_floor,
    unnest(@floors::bigint[]) AS floor) t
WHERE b.dataset_id = t.dataset_id AND b.last_seq > t.prev_floor AND b.last_seq <= t.floor;

-- name: CatalogSchemaVersionAppend :execrows
-- The dataset's row is locked by its upsert earlier in the transaction, so
-- concurrent recorders of one dataset append one after the other.
INSERT INTO faucet_catalog_schema_versions (dataset_id, version, recorded_at, run_id, schema, schema_hash)
SELECT @dataset_id::text,
    COALESCE((SELECT max(m.version) FROM faucet_catalog_schema_versions m WHERE m.dataset_id = @dataset_id::text), 0) + 1,
    @recorded_at, @run_id, @schema, @schema_hash::text
WHERE COALESCE((SELECT n.schema_hash FROM faucet_catalog_schema_versions n
    WHERE n.dataset_id = @dataset_id::text ORDER BY n.version DESC LIMIT 1), '') <> @schema_hash::text;

-- name: CatalogEdgeUpsert :exec
INSERT INTO faucet_catalog_edges AS e (src_id, dst_id, pipeline, row_id, first_seen, last_seen, last_run_id, runs, last_records)
SELECT unnest(@src_ids::text[]), unnest(@dst_ids::text[]), unnest(@pipelines::text[]), unnest(@row_ids::text[]),
    unnest(@first_seen::timestamptz[]), unnest(@last_seen::timestamptz[]), unnest(@last_run_ids::text[]),
    unnest(@runs::bigint[]), unnest(@last_records::bigint[])
ORDER BY 1, 2
ON CONFLICT (src_id, dst_id) DO UPDATE SET
    first_seen = LEAST(e.first_seen, excluded.first_seen),
    last_seen = GREATEST(e.last_seen, excluded.last_seen),
    pipeline = CASE WHEN excluded.last_seen >= e.last_seen THEN excluded.pipeline ELSE e.pipeline END,
    row_id = CASE WHEN excluded.last_seen >= e.last_seen THEN excluded.row_id ELSE e.row_id END,
    last_run_id = CASE WHEN excluded.last_seen >= e.last_seen THEN excluded.last_run_id ELSE e.last_run_id END,
    last_records = CASE WHEN excluded.last_seen >= e.last_seen THEN excluded.last_records ELSE e.last_records END,
    runs = e.runs + excluded.runs;

-- name: CatalogDatasetList :many
SELECT d.id, d.uri, d.kind, d.as_source, d.as_sink, d.first_seen, d.last_seen, d.last_run_id, d.pipeline,
    d.last_records, d.total_records, d.runs,
    COALESCE(v.version, 0)::integer AS schema_versions, v.schema, COALESCE(v.schema_hash, '')::text AS schema_hash
FROM faucet_catalog_datasets d
LEFT JOIN LATERAL (
    SELECT n.version, n.schema, n.schema_hash FROM faucet_catalog_schema_versions n
    WHERE n.dataset_id = d.id ORDER BY n.version DESC LIMIT 1
) v ON true
WHERE (sqlc.narg(kind)::text IS NULL OR d.kind = sqlc.narg(kind)::text)
  AND (sqlc.narg(folded)::text IS NULL OR strpos(d.uri_folded, sqlc.narg(folded)::text) > 0)
  AND (sqlc.narg(cursor)::text IS NULL OR (d.last_seen, d.id) < (
      SELECT c.last_seen, c.id FROM faucet_catalog_datasets c WHERE c.id = sqlc.narg(cursor)::text))
ORDER BY d.last_seen DESC, d.id DESC
LIMIT @page_limit;

-- name: CatalogDatasetGet :one
SELECT d.id, d.uri, d.kind, d.as_source, d.as_sink, d.first_seen, d.last_seen, d.last_run_id, d.pipeline,
    d.last_records, d.total_records, d.runs,
    COALESCE(v.version, 0)::integer AS schema_versions, v.schema, COALESCE(v.schema_hash, '')::text AS schema_hash
FROM faucet_catalog_datasets d
LEFT JOIN LATERAL (
    SELECT n.version, n.schema, n.schema_hash FROM faucet_catalog_schema_versions n
    WHERE n.dataset_id = d.id ORDER BY n.version DESC LIMIT 1
) v ON true
WHERE d.id = @id;

-- name: CatalogDatasetExists :one
SELECT EXISTS (SELECT 1 FROM faucet_catalog_datasets WHERE id = @id);

-- name: CatalogSchemaVersionList :many
-- The newest versions, newest first.
SELECT * FROM faucet_catalog_schema_versions
WHERE dataset_id = @dataset_id
ORDER BY version DESC
LIMIT @page_limit;

-- name: CatalogStatBlockList :many
-- The blocks holding any of a dataset's newest points, newest first.
SELECT b.last_seq, b.points, b.body::text AS body FROM faucet_catalog_stat_blocks b
WHERE b.dataset_id = @dataset_id
    AND b.last_seq > (SELECT d.stats_recorded FROM faucet_catalog_datasets d WHERE d.id = @dataset_id) - @newest::bigint
ORDER BY b.last_seq DESC;

-- name: CatalogEdgeList :many
SELECT sqlc.embed(e), s.uri AS src_uri, d.uri AS dst_uri
FROM faucet_catalog_edges e
JOIN faucet_catalog_datasets s ON s.id = e.src_id
JOIN faucet_catalog_datasets d ON d.id = e.dst_id
ORDER BY e.last_seen DESC, e.src_id, e.dst_id
LIMIT @page_limit;

-- name: CatalogEdgeListTouching :many
-- The edges from or to any of the given datasets: one level of the lineage
-- walk.
SELECT sqlc.embed(e), s.uri AS src_uri, d.uri AS dst_uri
FROM faucet_catalog_edges e
JOIN faucet_catalog_datasets s ON s.id = e.src_id
JOIN faucet_catalog_datasets d ON d.id = e.dst_id
WHERE e.src_id = ANY (@ids::text[]) OR e.dst_id = ANY (@ids::text[])
ORDER BY e.last_seen DESC, e.src_id, e.dst_id
LIMIT @page_limit;

-- name: ConfigSnapshotUpsert :exec
-- The new snapshot becomes the latest and the latest the previous, unless
-- it is older than the latest (a slow recorder) or the same run's again.
INSERT INTO faucet_config_snapshots AS c (pipeline, recorded_at, run_id, body)
VALUES (@pipeline, @recorded_at, @run_id, @body)
ON CONFLICT (pipeline) DO UPDATE SET
    previous_recorded_at = c.recorded_at,
    previous_run_id = c.run_id,
    previous_body = c.body,
    recorded_at = excluded.recorded_at,
    run_id = excluded.run_id,
    body = excluded.body
WHERE c.recorded_at <= excluded.recorded_at AND c.run_id <> excluded.run_id;

-- name: ConfigSnapshotGet :one
SELECT * FROM faucet_config_snapshots WHERE pipeline = @pipeline;
