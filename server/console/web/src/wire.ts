// The wire shapes of the data catalog (/v1/catalog/*), as faucet's
// published /v1 reference defines them, for the routes the generated types
// do not cover yet; and the template channels a person may assign.

export interface CatalogDataset {
  id: string;
  uri: string;
  kind: string;
  roles: ("source" | "sink")[];
  first_seen: string;
  last_seen: string;
  last_success: string;
  last_run_id: string;
  pipeline: string;
  last_records: number;
  total_records: number;
  runs: number;
  schema_versions: number;
  current_schema?: Record<string, unknown> | null;
  current_schema_hash?: string | null;
}

export interface CatalogSchemaVersion {
  dataset_id: string;
  version: number;
  recorded_at: string;
  run_id: string;
  schema: Record<string, unknown>;
  schema_hash: string;
  diff?: SchemaDiff | null;
}

/** A schema version's change from the one before. */
export interface SchemaDiff {
  added?: unknown;
  widened?: unknown;
  changed?: unknown;
  removed?: unknown;
}

export interface CatalogStatsPoint {
  recorded_at: string;
  run_id: string;
  records: number;
}

export interface CatalogLineageEdge {
  src_id: string;
  dst_id: string;
  src_uri: string;
  dst_uri: string;
  pipeline: string;
  row: string;
  first_seen: string;
  last_seen: string;
  last_run_id: string;
  runs: number;
  last_records: number;
  column_lineage?: Record<string, unknown> | null;
}

export interface CatalogDatasetDetail extends CatalogDataset {
  schema_timeline: CatalogSchemaVersion[];
  stats: CatalogStatsPoint[];
  upstream: CatalogLineageEdge[];
  downstream: CatalogLineageEdge[];
}

export interface DatasetPage {
  datasets: CatalogDataset[];
  next_cursor?: string | null;
}

export interface LineageGraph {
  edges: CatalogLineageEdge[];
  /** Set when the server left out older edges. */
  truncated?: boolean;
}

/** The channels a version can be pointed at by hand. */
export const assignableChannels = ["dev", "test", "staging", "pre-prod", "canary", "prod"] as const;
