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
	i := skipSpace(rec, 0)
	if i >= len(rec) || rec[i] != '{' {
		return errors.New("record is not a JSON object")
	}
	i = skipSpace(rec, i+1)
	if i < len(rec) && rec[i] == '}' {
		return nil
	}
	for {
		if i >= len(rec) || rec[i] != '"' {
			return errSyntax
		}
		end, err := stringEnd(rec, i)
		if err != nil {
			return err
		}
		key := rec[i+1 : end-1]
		i = skipSpace(rec, end)
		if i >= len(rec) || rec[i] != ':' {
			return errSyntax
		}
		i = skipSpace(rec, i+1)
		vend, err := valueEnd(rec, i)
		if err != nil {
			return err
		}
		if err := fn(key, rec[i:vend]); err != nil {
			return err
		}
		i = skipSpace(rec, vend)
		if i >= len(rec) {
			return errSyntax
		}
		switch rec[i] {
		case ',':
			i = skipSpace(rec, i+1)
		case '}':
			return nil
		default:
			return errSyntax
		}
	}
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

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
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
			switch b[j] {
			case '"':
				end, err := stringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errSyntax
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}
