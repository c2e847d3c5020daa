// Package connector is the vocabulary a connector and the pipeline that
// drives it share: the side of a pipeline a connector plays, and the shards
// a source splits into. It imports nothing, so the SDK (which third-party
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
