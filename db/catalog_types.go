package db

import (
	"encoding/json"
	"time"
)

// CatalogBatch is what a recorder writes at once, in one transaction: the
// invocations and config snapshots of runs that finished close together.
type CatalogBatch struct {
	// ID names the batch, the same on every attempt to write it: a batch
	// whose id was written before is not written again, so a retry after
	// a commit lost to its caller records nothing twice. It is kept for
	// BatchIDsKept.
	ID          string
	Invocations []CatalogInvocation
	Snapshots   []ConfigSnapshot
}

// CatalogInvocation is what one invocation of a run read and wrote, as the
// catalog records it: one stats row per dataset and side, the datasets'
// counters and schema timelines, and an edge from every source dataset to
// every sink dataset.
type CatalogInvocation struct {
	RunID string
	// Pipeline is the name of the run's pipeline.
	Pipeline string
	// RowID is the invocation's matrix row.
	RowID string
	// Status is the run's terminal status (a run whose other rows failed
	// is failed, though this row moved its records).
	Status RunStatus
	// RecordedAt is when it finished; zero means the store's clock.
	RecordedAt time.Time
	Duration   time.Duration
	// Sources and Sinks are the datasets each side reported.
	Sources, Sinks []CatalogObservation
}

// CatalogObservation is one dataset as a side of an invocation saw it.
type CatalogObservation struct {
	// URI is the dataset's canonical, credential-free URI; its id is
	// DatasetID(URI).
	URI  string
	Kind string
	// Schema is the observed schema; nil when none was observed.
	Schema []SchemaColumn
	// Records and Bytes are what the side moved (Bytes nil when unknown).
	Records int64
	Bytes   *int64
}

// SchemaColumn is one top-level column of a dataset's schema.
type SchemaColumn struct {
	Name string `json:"name"`
	// Type is a JSON Schema type name, or empty for values of several.
	Type     string `json:"type,omitempty"`
	Nullable bool   `json:"nullable,omitempty"`
	// DBType is the database's own name of the type, for a table.
	DBType string `json:"db_type,omitempty"`
}

// The roles a dataset is seen in.
const (
	RoleSource = "source"
	RoleSink   = "sink"
)

// CatalogDataset is one catalogued dataset.
type CatalogDataset struct {
	ID   string
	URI  string
	Kind string
	// Roles are the roles it has been seen in, "sink" before "source".
	Roles     []string
	FirstSeen time.Time
	// LastSeen is when a run last touched it. The catalog records the
	// invocations that succeeded, so it is also its last success.
	LastSeen  time.Time
	LastRunID string
	// Pipeline is the pipeline of the run that touched it last.
	Pipeline     string
	LastRecords  int64
	TotalRecords int64
	Runs         int64
	// SchemaVersions counts its schema timeline; CurrentSchema and
	// CurrentSchemaHash are the newest version's (nil and empty without).
	SchemaVersions    int
	CurrentSchema     []SchemaColumn
	CurrentSchemaHash string
}

// CatalogSchemaVersion is one entry of a dataset's schema timeline.
type CatalogSchemaVersion struct {
	DatasetID  string
	Version    int
	RecordedAt time.Time
	RunID      string
	Schema     []SchemaColumn
	SchemaHash string
	// Diff is the change from the version before; nil for the first.
	Diff *SchemaDiff
}

// SchemaDiff is how a schema differs from the one before it.
type SchemaDiff struct {
	// Added columns have From nil.
	Added []ColumnChange
	// Widened columns accept every value they did before: an integer
	// became a number, or a column became nullable.
	Widened []ColumnChange
	// Changed columns changed type any other way.
	Changed []ColumnChange
	// Removed are the names of the columns that are gone.
	Removed []string
}

// ColumnChange is one column's change.
type ColumnChange struct {
	Column   string
	From, To *SchemaColumn
}

// CatalogStat is one run's volume point for a dataset.
type CatalogStat struct {
	RecordedAt time.Time
	RunID      string
	RowID      string
	// Role is the side the dataset was on.
	Role string
	// Status is the run's terminal status.
	Status     RunStatus
	Records    int64
	Bytes      *int64
	DurationMS int64
}

// CatalogEdge is the lineage edge from one dataset to another.
type CatalogEdge struct {
	SrcID, DstID   string
	SrcURI, DstURI string
	// Pipeline and RowID are those of the run that moved records along it
	// last.
	Pipeline, RowID     string
	FirstSeen, LastSeen time.Time
	LastRunID           string
	Runs                int64
	LastRecords         int64
}

// CatalogDatasetDetail is a dataset with its schema timeline (oldest first),
// its newest volume points (newest first) and its edges.
type CatalogDatasetDetail struct {
	CatalogDataset
	Timeline   []CatalogSchemaVersion
	Stats      []CatalogStat
	Upstream   []CatalogEdge
	Downstream []CatalogEdge
}

// CatalogFilter selects a page of datasets.
type CatalogFilter struct {
	// Kind matches exactly; Q is a case-insensitive substring of the URI.
	Kind, Q *string
	// Limit <= 0 means DefaultCatalogLimit.
	Limit int
	// Cursor is the id of the previous page's last dataset.
	Cursor string
}

// CatalogPage is one page of datasets, newest activity first.
type CatalogPage struct {
	Datasets   []CatalogDataset
	NextCursor *string
}

// CatalogGraph is a slice of the lineage graph. Truncated says edges beyond
// the limit were left out.
type CatalogGraph struct {
	Edges     []CatalogEdge
	Truncated bool
}

// ConfigSnapshot is the redacted, resolved config a pipeline's run executed.
type ConfigSnapshot struct {
	Pipeline   string
	RecordedAt time.Time
	RunID      string
	// Body is a JSON object.
	Body json.RawMessage
}

// ConfigSnapshots are a pipeline's latest snapshot and the one before it.
type ConfigSnapshots struct {
	Latest   ConfigSnapshot
	Previous *ConfigSnapshot
}

// Catalog bounds: the page sizes of the listing, what a detail read
// returns, how deep and how large a lineage read goes, and how many volume
// points a dataset keeps.
const (
	DefaultCatalogLimit = 100
	MaxCatalogLimit     = 1000
	DetailStats         = 50
	DetailTimeline      = 200
	DetailEdges         = 1000
	DefaultLineageDepth = 5
	MaxLineageDepth     = 32
	MaxLineageEdges     = 5000
	StatsKept           = 500
)

// BatchIDsKept is how long a catalog batch's id is remembered: far longer
// than a recorder retries a write.
const BatchIDsKept = time.Hour

// forgetBatchIDsEvery is how often a store forgets the batch ids older
// than BatchIDsKept.
const forgetBatchIDsEvery = time.Minute

// maxBatchID bounds a catalog batch's id.
const maxBatchID = 64
