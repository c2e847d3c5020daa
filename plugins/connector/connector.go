// Package connector is the vocabulary a connector and the pipeline that
// drives it share: the side of a pipeline a connector plays, the shards a
// source splits into, and the schema a connector observed of a dataset. It imports nothing, so the SDK (which third-party
// connectors link) and the pipeline (which faucet links) use these very
// types without depending on each other; sdk and pipeline name them as
// aliases.
package connector

import "encoding/json"

// Role is the side of a pipeline a connector plays, and a config is meant
// for.
type Role string

// The two roles.
const (
	RoleSource Role = "source"
	RoleSink   Role = "sink"
)

// Shard is one part of a split source.
type Shard struct {
	// Descriptor is the connector's own description of the shard, a JSON
	// value faucet stores and hands back to the source's Read unchanged.
	Descriptor json.RawMessage
	// EstimatedRecords and EstimatedBytes size the shard; 0 when unknown.
	EstimatedRecords int64
	EstimatedBytes   int64
}

// Schema is the top-level shape of a dataset's records.
type Schema struct {
	Columns []Column
}

// Column is one top-level field of a dataset's records.
type Column struct {
	Name string
	// Type is a JSON Schema type name (string, integer, number, boolean,
	// object, array), or empty when the values have several.
	Type string
	// Nullable is set when the column may be null or missing.
	Nullable bool
	// DBType is the database's own name for the column's type, for a table.
	DBType string
}
