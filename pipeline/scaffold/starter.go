package scaffold

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/faucet-dev/faucet/pipeline"
)

// Side is one connector of a starter config and its config schema.
type Side struct {
	Connector string
	Schema    json.RawMessage
}

// Starter is a starter pipeline config for a source and a sink.
type Starter struct {
	// Comment heads the config, one "# " line per line of it: what wrote
	// it and how to go on.
	Comment      string
	Name         string
	Source, Sink Side
	// Answers are values a person gave, by "source.FIELD" or "sink.FIELD".
	Answers map[string]string
}

// Render writes the starter as commented YAML: each required field (and
// the first of required alternatives) set to its suggestion or left empty,
// and the optional fields after them, commented out, with their defaults.
func (s Starter) Render() string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s.Comment, "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "# %s\n", line)
		}
	}
	fmt.Fprintf(&b, "version: 1\nname: %s\npipeline:\n", yamlValue(s.Name))
	for _, side := range []struct {
		role pipeline.Role
		Side
	}{{pipeline.RoleSource, s.Source}, {pipeline.RoleSink, s.Sink}} {
		fmt.Fprintf(&b, "  %s:\n    type: %s\n    config:\n", side.role, side.Connector)
		fields := Fields(side.Schema)
		if len(fields) == 0 {
			b.WriteString("      {}\n")
		}
		for _, f := range fields {
			const indent = "      "
			if f.Description != "" {
				fmt.Fprintf(&b, "%s# %s\n", indent, f.note())
			}
			answer, answered := s.Answers[string(side.role)+"."+f.Name]
			value, suggested := f.Suggestion(side.Connector)
			switch {
			case answered:
				fmt.Fprintf(&b, "%s%s: %s\n", indent, f.Name, yamlAnswer(answer, f.Kind))
			case f.Required || f.First:
				if suggested {
					fmt.Fprintf(&b, "%s%s: %s\n", indent, f.Name, yamlValue(value))
				} else {
					fmt.Fprintf(&b, "%s%s:\n", indent, f.Name)
				}
			case suggested:
				fmt.Fprintf(&b, "%s# %s: %s\n", indent, f.Name, yamlValue(value))
			default:
				fmt.Fprintf(&b, "%s# %s:\n", indent, f.Name)
			}
		}
	}
	return b.String()
}

// yamlValue renders a schema value (a default, an example) as YAML: JSON is
// YAML's flow style.
func yamlValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

// yamlAnswer renders a typed-in answer: as the JSON it is when the field
// is not a string and it parses, quoted text otherwise.
func yamlAnswer(answer, kind string) string {
	if kind != "string" && json.Valid([]byte(answer)) {
		return answer
	}
	return yamlValue(answer)
}
