package api

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
)

// CatalogDataset is one dataset of the data movement catalog.
type CatalogDataset struct {
	ID        string        `json:"id" doc:"16-hex sha256 prefix of the canonical URI."`
	URI       string        `json:"uri" doc:"Canonical dataset URI, without credentials: a file:// URL of an absolute path, postgres://host:port/database/schema.table, sqlite:///path?table=main.name, …"`
	Kind      string        `json:"kind" doc:"Connector kind (csv, postgres, …)."`
	Roles     []DatasetRole `json:"roles" doc:"The roles runs have seen it in."`
	FirstSeen time.Time     `json:"first_seen"`
	LastSeen  time.Time     `json:"last_seen"`
	// The catalog records the invocations that succeeded, so the last one
	// seen is the last success.
	LastSuccess       time.Time     `json:"last_success" doc:"Last successful run that touched the dataset (freshness); the catalog records successful invocations, so it is last_seen."`
	LastRunID         string        `json:"last_run_id"`
	Pipeline          string        `json:"pipeline" doc:"Pipeline name of the most recent run."`
	LastRecords       int64         `json:"last_records"`
	TotalRecords      int64         `json:"total_records"`
	Runs              int64         `json:"runs"`
	SchemaVersions    int           `json:"schema_versions"`
	CurrentSchema     *RecordSchema `json:"current_schema,omitempty" doc:"Latest observed record schema; absent when none was observed."`
	CurrentSchemaHash *string       `json:"current_schema_hash,omitempty"`
}

// CatalogDatasetPage is the body of GET /v1/catalog/datasets.
type CatalogDatasetPage struct {
	Datasets   []CatalogDataset `json:"datasets"`
	NextCursor *string          `json:"next_cursor" nullable:"true" doc:"Pass as cursor to read the next page; null on the last page."`
}

// CatalogSchemaVersion is one entry of a dataset's schema timeline.
type CatalogSchemaVersion struct {
	DatasetID  string        `json:"dataset_id"`
	Version    int           `json:"version" doc:"1-based, appended only when the schema's content changes (column order aside)."`
	RecordedAt time.Time     `json:"recorded_at"`
	RunID      string        `json:"run_id"`
	Schema     RecordSchema  `json:"schema"`
	SchemaHash string        `json:"schema_hash"`
	Diff       *SchemaChange `json:"diff,omitempty" doc:"The change from the previous version; absent for version 1."`
}

// SchemaChange is how a schema version differs from the one before.
type SchemaChange struct {
	Added   []ColumnChange `json:"added" doc:"New columns."`
	Widened []ColumnChange `json:"widened" doc:"Columns that accept every value they did: an integer became a number, or the column became nullable."`
	Changed []ColumnChange `json:"changed" doc:"Columns whose type changed any other way."`
	Removed []string       `json:"removed" doc:"Names of the columns that are gone."`
}

// ColumnChange is one column's change, as JSON Schema fragments.
type ColumnChange struct {
	Column string          `json:"column"`
	From   *ColumnFragment `json:"from,omitempty" doc:"Absent for an added column."`
	To     ColumnFragment  `json:"to"`
}

// CatalogStatsPoint is one run's volume point for a dataset.
type CatalogStatsPoint struct {
	RecordedAt time.Time `json:"recorded_at"`
	RunID      string    `json:"run_id"`
	Records    int64     `json:"records"`
	RowID      string    `json:"row_id" doc:"The run's matrix row that moved them."`
	Role       string    `json:"role" enum:"source,sink" doc:"The side the dataset was on."`
	Status     RunStatus `json:"status" doc:"The run's terminal status (a run whose other rows failed is failed, though this row moved its records)."`
	Bytes      *int64    `json:"bytes,omitempty" doc:"Bytes of records moved, when the connector counted them."`
	DurationMS int64     `json:"duration_ms" doc:"How long the invocation took."`
}

// CatalogLineageEdge is the lineage edge from one dataset to another.
type CatalogLineageEdge struct {
	SrcID       string    `json:"src_id"`
	DstID       string    `json:"dst_id"`
	SrcURI      string    `json:"src_uri"`
	DstURI      string    `json:"dst_uri"`
	Pipeline    string    `json:"pipeline" doc:"Pipeline of the most recent run that moved records along it."`
	Row         string    `json:"row" doc:"Matrix row of that run."`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	LastRunID   string    `json:"last_run_id"`
	Runs        int64     `json:"runs"`
	LastRecords int64     `json:"last_records"`
}

// CatalogDatasetDetail is the body of GET /v1/catalog/datasets/{id}.
type CatalogDatasetDetail struct {
	CatalogDataset
	SchemaTimeline []CatalogSchemaVersion `json:"schema_timeline" doc:"Oldest first; the newest 200 versions."`
	Stats          []CatalogStatsPoint    `json:"stats" doc:"The newest 50 volume points, newest first."`
	Upstream       []CatalogLineageEdge   `json:"upstream" doc:"Edges into the dataset, newest first (at most 1000)."`
	Downstream     []CatalogLineageEdge   `json:"downstream" doc:"Edges out of the dataset, newest first (at most 1000)."`
}

// CatalogLineage is the body of GET /v1/catalog/lineage.
type CatalogLineage struct {
	Edges     []CatalogLineageEdge `json:"edges"`
	Truncated bool                 `json:"truncated" doc:"true when the graph has more edges than the 5000 returned (the newest)."`
}

// ConfigSnapshotRecord is the body of GET /v1/catalog/snapshots/{pipeline}.
type ConfigSnapshotRecord struct {
	Pipeline   string                  `json:"pipeline"`
	RecordedAt time.Time               `json:"recorded_at"`
	RunID      string                  `json:"run_id" doc:"The run that executed it."`
	Snapshot   map[string]any          `json:"snapshot" doc:"The resolved config the run executed: settings, and each matrix row's connectors and configs, every secret replaced by a salted fingerprint (<secret:…>)."`
	Previous   *ConfigSnapshotPrevious `json:"previous,omitempty" doc:"The snapshot before it, when there is one."`
}

// ConfigSnapshotPrevious is a pipeline's snapshot before its latest.
type ConfigSnapshotPrevious struct {
	RecordedAt time.Time      `json:"recorded_at"`
	RunID      string         `json:"run_id"`
	Snapshot   map[string]any `json:"snapshot"`
}

// DatasetRole is a side of a pipeline a dataset is seen on.
type DatasetRole string

// Schema makes DatasetRole the DatasetRole component.
func (DatasetRole) Schema(r huma.Registry) *huma.Schema {
	return enumComponent(r, "DatasetRole", "The side of a pipeline a dataset is seen on.", db.RoleSource, db.RoleSink)
}

// RecordSchema is a dataset's schema as a JSON Schema object whose
// properties are its columns, in their order.
type RecordSchema []db.SchemaColumn

// Schema documents RecordSchema as the object it marshals to, the
// RecordSchema component.
func (RecordSchema) Schema(r huma.Registry) *huma.Schema {
	const name = "RecordSchema"
	if _, ok := r.Map()[name]; !ok {
		r.Map()[name] = &huma.Schema{
			Type:        huma.TypeObject,
			Description: "A record schema in JSON Schema form, {type: object, properties: {column: fragment}}, the columns in their order.",
			Properties: map[string]*huma.Schema{
				"type":       {Type: huma.TypeString, Enum: []any{"object"}},
				"properties": {Type: huma.TypeObject, AdditionalProperties: r.Schema(reflectType[ColumnFragment](), true, "")},
			},
			Required:             []string{"type", "properties"},
			AdditionalProperties: false,
		}
	}
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// MarshalJSON writes the properties in column order, which a map would
// sort.
func (s RecordSchema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, c := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(c.Name)
		if err != nil {
			return nil, err
		}
		frag, err := json.Marshal(fragment(c))
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(frag)
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// ColumnFragment is one column as a JSON Schema fragment: its type (with
// "null" when nullable; none for values of several types) and, for a
// table, the database's type as x-db-type.
type ColumnFragment struct {
	Type   any    `json:"type,omitempty" doc:"A JSON Schema type name, or [type, \"null\"] for a nullable column; absent for a column whose values have several types."`
	DBType string `json:"x-db-type,omitempty" doc:"The database's own name of the column's type."`
}

func fragment(c db.SchemaColumn) ColumnFragment {
	f := ColumnFragment{DBType: c.DBType}
	switch {
	case c.Type != "" && c.Nullable:
		f.Type = []string{c.Type, "null"}
	case c.Type != "":
		f.Type = c.Type
	}
	return f
}

func toCatalogDataset(d db.CatalogDataset) CatalogDataset {
	out := CatalogDataset{
		ID: d.ID, URI: d.URI, Kind: d.Kind, Roles: make([]DatasetRole, len(d.Roles)),
		FirstSeen: d.FirstSeen, LastSeen: d.LastSeen, LastSuccess: d.LastSeen, LastRunID: d.LastRunID, Pipeline: d.Pipeline,
		LastRecords: d.LastRecords, TotalRecords: d.TotalRecords, Runs: d.Runs, SchemaVersions: d.SchemaVersions,
	}
	for i, r := range d.Roles {
		out.Roles[i] = DatasetRole(r)
	}
	if d.SchemaVersions > 0 {
		s := RecordSchema(d.CurrentSchema)
		out.CurrentSchema, out.CurrentSchemaHash = &s, &d.CurrentSchemaHash
	}
	return out
}

func toCatalogEdges(edges []db.CatalogEdge) []CatalogLineageEdge {
	out := make([]CatalogLineageEdge, len(edges))
	for i, e := range edges {
		out[i] = CatalogLineageEdge{
			SrcID: e.SrcID, DstID: e.DstID, SrcURI: e.SrcURI, DstURI: e.DstURI, Pipeline: e.Pipeline, Row: e.RowID,
			FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, LastRunID: e.LastRunID, Runs: e.Runs, LastRecords: e.LastRecords,
		}
	}
	return out
}

func toSchemaChange(d *db.SchemaDiff) *SchemaChange {
	if d == nil {
		return nil
	}
	changes := func(cs []db.ColumnChange) []ColumnChange {
		out := make([]ColumnChange, len(cs))
		for i, c := range cs {
			out[i] = ColumnChange{Column: c.Column, To: fragment(*c.To)}
			if c.From != nil {
				from := fragment(*c.From)
				out[i].From = &from
			}
		}
		return out
	}
	removed := d.Removed
	if removed == nil {
		removed = []string{}
	}
	return &SchemaChange{Added: changes(d.Added), Widened: changes(d.Widened), Changed: changes(d.Changed), Removed: removed}
}

func toCatalogDetail(d *db.CatalogDatasetDetail) CatalogDatasetDetail {
	out := CatalogDatasetDetail{
		CatalogDataset: toCatalogDataset(d.CatalogDataset),
		SchemaTimeline: make([]CatalogSchemaVersion, len(d.Timeline)),
		Stats:          make([]CatalogStatsPoint, len(d.Stats)),
		Upstream:       toCatalogEdges(d.Upstream),
		Downstream:     toCatalogEdges(d.Downstream),
	}
	for i, v := range d.Timeline {
		out.SchemaTimeline[i] = CatalogSchemaVersion{
			DatasetID: v.DatasetID, Version: v.Version, RecordedAt: v.RecordedAt, RunID: v.RunID,
			Schema: RecordSchema(v.Schema), SchemaHash: v.SchemaHash, Diff: toSchemaChange(v.Diff),
		}
	}
	for i, s := range d.Stats {
		out.Stats[i] = CatalogStatsPoint{
			RecordedAt: s.RecordedAt, RunID: s.RunID, Records: s.Records, RowID: s.RowID, Role: s.Role,
			Status: RunStatus(s.Status), Bytes: s.Bytes, DurationMS: s.DurationMS,
		}
	}
	return out
}
