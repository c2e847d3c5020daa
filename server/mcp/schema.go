package mcp

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/faucet-dev/faucet/openapi/client"
)

// Bounds of the tools' arguments. The API checks its own bounds, and
// answers past them with its error; these keep an argument the API would
// refuse from being sent at all, and tell an assistant the bounds up front.
const (
	maxIDBytes          = 128
	maxTemplateIDBytes  = 64
	maxNameBytes        = 256
	maxKeyBytes         = 256
	maxTextBytes        = 1024
	maxLabels           = 64
	maxLabelKeyBytes    = 128
	maxLabelValueBytes  = 1024
	maxParams           = 64
	maxParamValueBytes  = 64 << 10
	maxVersionBytes     = 32
	maxConnectorBytes   = 128
	maxRunsPerPage      = 100
	defaultRunsPerPage  = 20
	maxLogLinesPerPage  = 1000
	defaultLogLinesPage = 200
)

// The tools' enums, as the API spells them.
var (
	configFormats      = []any{"yaml", "json"}
	runStatuses        = []any{"pending", "queued", "running", "sharded", "completed", "failed", "cancelled"}
	assignableChannels = []any{"dev", "test", "staging", "pre-prod", "canary", "prod"}
)

// shape adjusts the properties of an inferred input schema.
type shape map[string]func(p *jsonschema.Schema)

// apply runs every adjustment on its property; one naming no property is
// a mistake in a tool's definition.
func (sh shape) apply(s *jsonschema.Schema) {
	for name, f := range sh {
		p, ok := s.Properties[name]
		if !ok {
			panic("mcp: shape of unknown property " + name)
		}
		f(p)
	}
}

func maxLen(n int) func(*jsonschema.Schema) {
	return func(p *jsonschema.Schema) { p.MinLength, p.MaxLength = ptr(1), ptr(n) }
}

func enum(vals []any) func(*jsonschema.Schema) {
	return func(p *jsonschema.Schema) { p.Enum = vals }
}

// between bounds an integer. It states no default in the schema: the SDK
// fills schema defaults into the arguments, and that panics on arguments
// that are null (jsonschema-go 0.4.3), so each tool applies its own.
func between(lo, hi int) func(*jsonschema.Schema) {
	return func(p *jsonschema.Schema) { p.Minimum, p.Maximum = ptr(float64(lo)), ptr(float64(hi)) }
}

func atLeast(lo int) func(*jsonschema.Schema) {
	return func(p *jsonschema.Schema) { p.Minimum = ptr(float64(lo)) }
}

// stringMap bounds a map of strings as the API bounds labels.
func stringMap(p *jsonschema.Schema) {
	p.MaxProperties = ptr(maxLabels)
	p.PropertyNames = &jsonschema.Schema{Type: "string", MinLength: ptr(1), MaxLength: ptr(maxLabelKeyBytes)}
	p.AdditionalProperties = &jsonschema.Schema{Type: "string", MaxLength: ptr(maxLabelValueBytes)}
}

// params bounds a template's param values: strings, numbers and booleans.
func params(p *jsonschema.Schema) {
	p.MaxProperties = ptr(maxParams)
	p.PropertyNames = &jsonschema.Schema{Type: "string", MinLength: ptr(1), MaxLength: ptr(64)}
	p.AdditionalProperties = &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Type: "string", MaxLength: ptr(maxParamValueBytes)}, {Type: "number"}, {Type: "boolean"},
	}}
}

// version is a template version: a number, or a channel's name.
func versionArg(p *jsonschema.Schema) {
	*p = jsonschema.Schema{
		Description: p.Description,
		OneOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: ptr(1.0)},
			{Type: "string", MinLength: ptr(1), MaxLength: ptr(maxVersionBytes)},
		},
	}
}

// versionDoc describes a version argument.
const versionDoc = "A version number, or a channel: stable (the launched version), previous, newest, dev, test, " +
	"staging, pre-prod, canary or prod. latest is no channel."

// selector is a version argument as the API's request bodies take it.
func selector(v any) (*client.VersionSelector, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	var s client.VersionSelector
	if err := s.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	return &s, nil
}

// versionQuery is a version argument as the API's query parameters take it.
func versionQuery(v any) *string {
	switch x := v.(type) {
	case nil:
		return nil
	case float64:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		return &s
	case string:
		return &x
	}
	s := fmt.Sprint(v)
	return &s
}
