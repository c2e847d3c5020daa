// Package scaffold writes starter pipeline configs from connectors' config
// schemas. faucet init, connectors spec and the MCP tool scaffold_config
// read a schema the same way, so a field is described and suggested alike
// wherever a person or an assistant meets it.
package scaffold

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Field is one top-level property of a connector's config schema.
type Field struct {
	Name        string
	Kind        string
	Description string
	Required    bool
	// Choice is the required-key alternative the field belongs to (a
	// config sets table or query); First marks the first alternative.
	Choice []string
	First  bool
	Secret bool
	// Default is the schema's default; HasDefault tells a null default
	// from none.
	Default    any
	HasDefault bool
	Examples   []any
}

// property is the part of a JSON Schema property a starter reads.
type property struct {
	Type        any    `json:"type"`
	Enum        []any  `json:"enum"`
	Const       any    `json:"const"`
	Description string `json:"description"`
	WriteOnly   bool   `json:"writeOnly"`
	Default     any    `json:"default"`
	Examples    []any  `json:"examples"`
	Items       *struct {
		Type any `json:"type"`
	} `json:"items"`
}

// configSchema is the part of a connector's config schema a starter reads:
// its properties, its required keys, and required-key alternatives
// ({"oneOf": [{"required": ["table"]}, {"required": ["query"]}]}).
type configSchema struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	OneOf      []struct {
		Required []string `json:"required"`
	} `json:"oneOf"`
	AnyOf []struct {
		Required []string `json:"required"`
	} `json:"anyOf"`
}

// alternatives lists the required-key alternatives, each as its keys.
func (s configSchema) alternatives() [][]string {
	var out [][]string
	for _, b := range s.OneOf {
		if len(b.Required) > 0 {
			out = append(out, b.Required)
		}
	}
	for _, b := range s.AnyOf {
		if len(b.Required) > 0 {
			out = append(out, b.Required)
		}
	}
	return out
}

// Fields lists the top-level properties of a config schema: the required
// ones first, then those of required-key alternatives, then the rest, each
// group by name. A schema that does not parse has none.
func Fields(raw json.RawMessage) []Field {
	var s configSchema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	alts := s.alternatives()
	var everyChoice []string
	for _, a := range alts {
		everyChoice = append(everyChoice, a...)
	}
	var out []Field
	for name, rawProp := range s.Properties {
		var p property
		_ = json.Unmarshal(rawProp, &p)
		var probe map[string]json.RawMessage
		_ = json.Unmarshal(rawProp, &probe)
		_, hasDefault := probe["default"]
		f := Field{
			Name: name, Kind: p.kind(), Description: p.Description, Required: slices.Contains(s.Required, name),
			Secret: p.WriteOnly, Default: p.Default, HasDefault: hasDefault, Examples: p.Examples,
		}
		if slices.Contains(everyChoice, name) {
			f.Choice, f.First = everyChoice, slices.Contains(alts[0], name)
		}
		out = append(out, f)
	}
	rank := func(f Field) int {
		switch {
		case f.Required:
			return 0
		case f.Choice != nil:
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(a, b Field) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// kind names the property's type the way a person reads it.
func (p property) kind() string {
	switch {
	case len(p.Enum) > 0:
		var vals []string
		for _, v := range p.Enum {
			vals = append(vals, fmt.Sprint(v))
		}
		return strings.Join(vals, "|")
	case p.Const != nil:
		return fmt.Sprint(p.Const)
	}
	switch t := p.Type.(type) {
	case string:
		if t == "array" && p.Items != nil {
			if it, ok := p.Items.Type.(string); ok {
				return "array of " + it
			}
		}
		return t
	case []any:
		var names []string
		for _, x := range t {
			names = append(names, fmt.Sprint(x))
		}
		return strings.Join(names, "|")
	}
	return "any"
}

// Tags mark what a person must know of a field first: whether a config
// needs it, and whether it is a secret.
func (f Field) Tags() []string {
	var tags []string
	switch {
	case f.Required:
		tags = append(tags, "required")
	case f.Choice != nil:
		tags = append(tags, "required: one of "+strings.Join(f.Choice, ", "))
	}
	if f.Secret {
		tags = append(tags, "secret")
	}
	return tags
}

// Describe sums up a field in one line, as connectors spec lists it.
func (f Field) Describe() string {
	parts := f.Tags()
	if f.HasDefault {
		d, _ := json.Marshal(f.Default)
		parts = append(parts, "default "+string(d))
	}
	text := strings.Join(parts, ", ")
	switch {
	case text == "":
		return f.Description
	case f.Description == "":
		return "(" + text + ")"
	}
	return "(" + text + ") " + f.Description
}

// note is the comment above a field in a starter config.
func (f Field) note() string {
	return "(" + strings.Join(append(f.Tags(), f.Kind), ", ") + ") " + f.Description
}

// Suggestion is the value a field starts with: the schema's default or
// first example, or for a secret a reference to an environment variable
// named for the connector and the field, so the secret stays out of the
// config.
func (f Field) Suggestion(connector string) (any, bool) {
	switch {
	case f.HasDefault:
		return f.Default, true
	case len(f.Examples) > 0:
		return f.Examples[0], true
	case f.Secret && f.Kind == "string":
		return "${env:" + strings.ToUpper(connector+"_"+f.Name) + "}", true
	}
	return nil, false
}
