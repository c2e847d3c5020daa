package pipeline

import "encoding/json"

// Role is the side of a pipeline a connector plays.
type Role string

// The two roles.
const (
	RoleSource Role = "source"
	RoleSink   Role = "sink"
)

// Catalog tells the config loader which connectors exist and what config each
// accepts. The plugin host implements it from the connectors' Specs.
//
// A config field the connector treats as a secret is marked in its schema with
// the standard JSON Schema annotation "writeOnly": true; the loader redacts
// such values everywhere.
type Catalog interface {
	// ConnectorSchema returns the JSON Schema of the named connector's config in
	// the given role.
	ConnectorSchema(role Role, name string) (json.RawMessage, bool)
	// ConnectorNames lists the connectors available in the given role, sorted,
	// for "unknown connector" errors.
	ConnectorNames(role Role) []string
}
