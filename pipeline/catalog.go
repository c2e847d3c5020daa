package pipeline

import (
	"encoding/json"

	"github.com/faucet-dev/faucet/plugins/connector"
)

// Role is the side of a pipeline a connector plays.
type Role = connector.Role

// The two roles.
const (
	RoleSource = connector.RoleSource
	RoleSink   = connector.RoleSink
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

// WriteModeOverwrite is the write mode of a sink that replaces its target's
// contents (a file, a table) with the records of the run.
const WriteModeOverwrite = "overwrite"

// SinkWriteMode returns the write mode a sink config resolves to: its
// write_mode, or else the default the connector's schema declares for it;
// "" when neither says.
func SinkWriteMode(c Catalog, sink ConnectorConfig) string {
	var cfg struct {
		WriteMode string `json:"write_mode"`
	}
	if json.Unmarshal(sink.Config, &cfg) == nil && cfg.WriteMode != "" {
		return cfg.WriteMode
	}
	raw, ok := c.ConnectorSchema(RoleSink, sink.Type)
	if !ok || len(raw) == 0 {
		return ""
	}
	doc, err := connectorSchemas.compile(schemaKey(RoleSink, sink.Type), raw)
	if err != nil {
		return ""
	}
	return doc.writeMode
}
