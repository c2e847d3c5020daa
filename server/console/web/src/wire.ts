// The wire shapes of the data catalog (/v1/catalog/*) and the template
// registry (/v1/templates*), as faucet's published /v1 reference defines
// them, for the routes the generated types do not cover yet.

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
}

export type ParamType = "string" | "int" | "float" | "bool";

export interface ParamSpec {
  type?: ParamType;
  required?: boolean;
  default?: unknown;
  secret?: boolean;
  description?: string;
}

export type TemplateStatus = "draft" | "launched" | "deprecated";

export interface DeprecationRecord {
  deprecated_at: string;
  deprecated_by?: string | null;
  reason?: string | null;
}

export interface TemplateState {
  status: TemplateStatus;
  versions: number[];
  stable?: number | null;
  previous?: number | null;
  newest?: number | null;
  tags: Record<string, number>;
  deprecation?: DeprecationRecord;
}

export interface TemplateSummary {
  id: string;
  version: number;
  name?: string | null;
  description?: string | null;
  params: Record<string, ParamSpec>;
  created_at: string;
  created_by?: string | null;
  state?: TemplateState;
}

export interface LaunchRecord {
  seq: number;
  version: number;
  launched_at: string;
  launched_by?: string | null;
}

export interface TemplateDetail extends TemplateSummary, TemplateState {
  body: string;
  format: "yaml" | "json";
  is_stable: boolean;
  launches: LaunchRecord[];
}

export interface LaunchResponse {
  id: string;
  version: number;
  replaced?: number;
  already_launched: boolean;
  status: TemplateStatus;
}

export interface TriggerTemplateResponse {
  run_id: string;
  status: "queued" | "pending";
  submitted_at: string;
  template_id: string;
  template_version: number;
  params: Record<string, unknown>;
  deprecated?: string;
}

/** The channels a version can be pointed at by hand. */
export const assignableChannels = ["dev", "test", "staging", "pre-prod", "canary", "prod"] as const;
