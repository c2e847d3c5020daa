// Package tabular is what the SQL connectors share: reading a record's
// members without decoding it, inferring table columns from records, quoting
// identifiers, and the primary-key range shards their sources split into.
package tabular

import (
	"encoding/json"
	"errors"
	"fmt"
)

var errSyntax = errors.New("malformed JSON object")

// Fields calls fn with each member of the JSON object rec, in order: the key
// as it appears between its quotes (still escaped; see Key) and the value's
// raw JSON. It allocates nothing, which matters at a million records per run.
func Fields(rec []byte, fn func(key, value []byte) error) error {
	var m members
	if err := m.start(rec); err != nil {
		return err
	}
	for {
		key, value, ok, err := m.next()
		if err != nil || !ok {
			return err
		}
		if err := fn(key, value); err != nil {
			return err
		}
	}
}

// members walks the members of a JSON object like Fields, for the loops
// that cannot afford a call through a function value per member.
type members struct {
	rec  []byte
	i    int
	done bool
}

// start begins walking the object rec.
func (m *members) start(rec []byte) error {
	i := skipSpace(rec, 0)
	if i >= len(rec) || rec[i] != '{' {
		return errors.New("record is not a JSON object")
	}
	i = skipSpace(rec, i+1)
	*m = members{rec: rec, i: i, done: i < len(rec) && rec[i] == '}'}
	return nil
}

// next returns the next member's raw key (as Fields gives it) and value;
// ok is false after the last one.
func (m *members) next() (key, value []byte, ok bool, err error) {
	if m.done {
		return nil, nil, false, nil
	}
	rec, i := m.rec, m.i
	if i >= len(rec) || rec[i] != '"' {
		return nil, nil, false, errSyntax
	}
	end, err := stringEnd(rec, i)
	if err != nil {
		return nil, nil, false, err
	}
	key = rec[i+1 : end-1]
	i = skipSpace(rec, end)
	if i >= len(rec) || rec[i] != ':' {
		return nil, nil, false, errSyntax
	}
	i = skipSpace(rec, i+1)
	vend, err := valueEnd(rec, i)
	if err != nil {
		return nil, nil, false, err
	}
	value = rec[i:vend]
	i = skipSpace(rec, vend)
	if i >= len(rec) {
		return nil, nil, false, errSyntax
	}
	switch rec[i] {
	case ',':
		m.i = skipSpace(rec, i+1)
	case '}':
		m.done = true
	default:
		return nil, nil, false, errSyntax
	}
	return key, value, true, nil
}

// Key returns a raw key from Fields as a string, unescaping it if needed.
func Key(raw []byte) (string, error) {
	for _, c := range raw {
		if c == '\\' {
			var s string
			quoted := make([]byte, 0, len(raw)+2)
			quoted = append(append(append(quoted, '"'), raw...), '"')
			if err := json.Unmarshal(quoted, &s); err != nil {
				return "", fmt.Errorf("bad key %s: %w", quoted, err)
			}
			return s, nil
		}
	}
	return string(raw), nil
}

// AppendUnquoted appends the text of the raw JSON string value to dst,
// copying it straight through when it has no escapes.
func AppendUnquoted(dst, raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, errors.New("not a JSON string")
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return dst, err
			}
			return append(dst, s...), nil
		}
	}
	return append(dst, inner...), nil
}

// Byte classes of the scans: stringStops end a run of a string's plain
// bytes, nestStops the bytes a nested value's scan looks at, and bareEnds
// end a number or a literal.
var stringStops, nestStops, bareEnds [256]bool

func init() {
	stringStops['"'], stringStops['\\'] = true, true
	for _, c := range `"{}[]` {
		nestStops[c] = true
	}
	for _, c := range ",}] \t\n\r" {
		bareEnds[c] = true
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		if !stringStops[b[j]] {
			continue
		}
		if b[j] == '"' {
			return j + 1, nil
		}
		j++
	}
	return 0, errSyntax
}

// valueEnd returns the index just past the JSON value starting at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			if !nestStops[b[j]] {
				continue
			}
			switch b[j] {
			case '"':
				end, err := stringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errSyntax
	default:
		j := i
		for j < len(b) && !bareEnds[b[j]] {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}
