package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// schemaField is one top-level property of a connector's config schema, as
// connectors spec shows it and faucet init writes it.
type schemaField struct {
	name        string
	kind        string
	description string
	required    bool
	// choice is the required-key alternative the field belongs to (a
	// config sets table or query); first marks the first alternative.
	choice []string
	first  bool
	secret bool
	// def is the schema's default; hasDefault tells a null default from none.
	def        any
	hasDefault bool
	examples   []any
}

// schemaProperty is the part of a JSON Schema property the CLI reads.
type schemaProperty struct {
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

// configSchema is the part of a connector's config schema the CLI reads:
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

// schemaFields lists the top-level properties of a config schema: the
// required ones first, then those of required-key alternatives, then the
// rest, each group by name.
func schemaFields(raw json.RawMessage) []schemaField {
	var s configSchema
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	alts := s.alternatives()
	var everyChoice []string
	for _, a := range alts {
		everyChoice = append(everyChoice, a...)
	}
	var out []schemaField
	for name, rawProp := range s.Properties {
		var p schemaProperty
		_ = json.Unmarshal(rawProp, &p)
		var probe map[string]json.RawMessage
		_ = json.Unmarshal(rawProp, &probe)
		_, hasDefault := probe["default"]
		f := schemaField{
			name: name, kind: p.kind(), description: p.Description, required: slices.Contains(s.Required, name),
			secret: p.WriteOnly, def: p.Default, hasDefault: hasDefault, examples: p.Examples,
		}
		if slices.Contains(everyChoice, name) {
			f.choice, f.first = everyChoice, slices.Contains(alts[0], name)
		}
		out = append(out, f)
	}
	rank := func(f schemaField) int {
		switch {
		case f.required:
			return 0
		case f.choice != nil:
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(a, b schemaField) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// kind names the property's type the way a person reads it.
func (p schemaProperty) kind() string {
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

// tags mark what a person must know of a field first: whether a config
// needs it, and whether it is a secret.
func (f schemaField) tags() []string {
	var tags []string
	switch {
	case f.required:
		tags = append(tags, "required")
	case f.choice != nil:
		tags = append(tags, "required: one of "+strings.Join(f.choice, ", "))
	}
	if f.secret {
		tags = append(tags, "secret")
	}
	return tags
}

// describe sums up a field for connectors spec.
func (f schemaField) describe() string {
	parts := f.tags()
	if f.hasDefault {
		d, _ := json.Marshal(f.def)
		parts = append(parts, "default "+string(d))
	}
	text := strings.Join(parts, ", ")
	switch {
	case text == "":
		return f.description
	case f.description == "":
		return "(" + text + ")"
	}
	return "(" + text + ") " + f.description
}
