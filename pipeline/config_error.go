package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ConfigError is one problem in a pipeline config, located precisely enough
// for a person to fix it: the JSON path of the offending value and, when the
// value came from the submitted document, its line and column. The HTTP layer
// answers 400 with these fields; the CLI prints Error().
type ConfigError struct {
	// File names the document when it was loaded from a file ("pipeline.yaml"),
	// or "defaults" for the default config merged under the submitted one.
	File string
	// Path is the JSON path of the value ("pipeline.source.config.delimiter",
	// "matrix[2].id"); empty when the problem concerns the whole document.
	Path string
	// Line and Column are 1-based; 0 when the value did not come from the
	// submitted document (a default, a --set override) or has no position.
	Line   int
	Column int
	// Rows are the ids of the matrix rows the problem arose in while
	// building their invocations from values shared with other rows; empty
	// when it concerns no row in particular or every row alike.
	Rows []string
	// Set is the --set override the offending value came from ("key=value");
	// such a problem has no position in the file.
	Set string
	// Message says what is wrong, in lowercase, never containing a secret.
	Message string

	// at is Path before rendering, kept to look up positions.
	at path
}

// Error renders the problem as "file:line:col: path: message", or as
// "--set key=value: path: message" for a value an override set, leaving out
// the parts that are unknown.
func (e *ConfigError) Error() string {
	var b strings.Builder
	switch {
	case e.Set != "":
		fmt.Fprintf(&b, "--set %s: ", e.Set)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	switch len(e.Rows) {
	case 0:
	case 1:
		fmt.Fprintf(&b, " (matrix row %q)", e.Rows[0])
	default:
		quoted := make([]string, len(e.Rows))
		for i, r := range e.Rows {
			quoted[i] = strconv.Quote(r)
		}
		fmt.Fprintf(&b, " (matrix rows %s)", strings.Join(quoted, ", "))
	}
	return b.String()
}

// ConfigErrors is every problem found in one config, in document order. Load
// reports them together so a user fixes a config in one pass, not one error
// per attempt.
type ConfigErrors []*ConfigError

// Error renders one problem per line.
func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem to errors.As.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// ConfigProblems returns every ConfigError that err carries (one for a
// *ConfigError, all of them for ConfigErrors), or nil when err is not a
// config problem (an unreadable file, a broken connector schema).
func ConfigProblems(err error) []*ConfigError {
	var many ConfigErrors
	if errors.As(err, &many) {
		return many
	}
	var one *ConfigError
	if errors.As(err, &one) {
		return []*ConfigError{one}
	}
	return nil
}

// maxReported bounds how many problems one load reports; past it the list
// stops helping.
const maxReported = 50

// problems collects ConfigErrors while loading. A shared value failing the
// same way in several matrix rows is one problem naming those rows.
type problems struct {
	list []*ConfigError
	seen map[string]*ConfigError
}

func (p *problems) add(e *ConfigError) {
	key := e.File + "\x00" + e.Set + "\x00" + e.Path + "\x00" + e.Message
	if p.seen == nil {
		p.seen = map[string]*ConfigError{}
	}
	if prev, ok := p.seen[key]; ok {
		for _, r := range e.Rows {
			if !slices.Contains(prev.Rows, r) {
				prev.Rows = append(prev.Rows, r)
			}
		}
		return
	}
	p.seen[key] = e
	p.list = append(p.list, e)
}

// forgetRows drops the row annotation of the problems that arose in each
// of the config's rows alike: naming them all would only be noise.
func (p *problems) forgetRows(rows int) {
	for _, e := range p.list {
		if rows > 1 && len(e.Rows) == rows {
			e.Rows = nil
		}
	}
}

func (p *problems) empty() bool { return len(p.list) == 0 }

// err sorts the problems into document order (positioned ones first, by line
// and column; then the rest by path) and returns them as one error.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	list := p.list
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if (a.Line > 0) != (b.Line > 0) {
			return a.Line > 0
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Message < b.Message
	})
	if len(list) > maxReported {
		extra := len(list) - maxReported
		list = append(list[:maxReported:maxReported], &ConfigError{Message: fmt.Sprintf("and %d more problems", extra)})
	}
	if len(list) == 1 {
		return list[0]
	}
	return ConfigErrors(list)
}

// path is a location in a config document: object keys (string) and array
// indexes (int).
type path []any

// child returns a new path one element deeper; it never aliases p's storage.
func (p path) child(elem any) path {
	out := make(path, len(p)+1)
	copy(out, p)
	out[len(p)] = elem
	return out
}

// plainKey reports whether key is an identifier ([A-Za-z_][A-Za-z0-9_-]*),
// written bare in a path.
func plainKey(key string) bool {
	for i, c := range []byte(key) {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && (c == '-' || '0' <= c && c <= '9'):
		default:
			return false
		}
	}
	return key != ""
}

// String renders p the way users write it: dotted keys, bracketed indexes,
// and quoted brackets for keys that are not plain identifiers.
func (p path) String() string {
	var b strings.Builder
	for _, elem := range p {
		switch e := elem.(type) {
		case int:
			b.WriteString("[")
			b.WriteString(strconv.Itoa(e))
			b.WriteString("]")
		case string:
			if plainKey(e) {
				if b.Len() > 0 {
					b.WriteString(".")
				}
				b.WriteString(e)
			} else {
				q, _ := json.Marshal(e)
				b.WriteString("[")
				b.Write(q)
				b.WriteString("]")
			}
		}
	}
	return b.String()
}

// pathFromLocation turns a JSON Schema instance location (all strings) into a
// path, using the instance itself to tell array indexes from object keys.
func pathFromLocation(base path, instance any, loc []string) path {
	out := append(path{}, base...)
	cur := instance
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				out = append(out, tok)
				cur = nil
				continue
			}
			out = append(out, i)
			cur = c[i]
		case map[string]any:
			out = append(out, tok)
			cur = c[tok]
		default:
			out = append(out, tok)
			cur = nil
		}
	}
	return out
}

// lookup returns the value at p inside tree.
func lookup(tree any, p path) (any, bool) {
	cur := tree
	for _, elem := range p {
		switch e := elem.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[e]; !ok {
				return nil, false
			}
		case int:
			a, ok := cur.([]any)
			if !ok || e < 0 || e >= len(a) {
				return nil, false
			}
			cur = a[e]
		}
	}
	return cur, true
}
