package sdk

import (
	"bytes"
	"encoding/json"
)

// How much of a session's records the schema inference looks at: every
// record until sampleFirst were seen, then the first samplePerBatch of each
// batch, so a column that turns up or turns null later is likely seen, at a
// cost that does not grow with the batch.
const (
	sampleFirst    = 1000
	samplePerBatch = 8
)

// The value kinds a column can have, as bits.
const (
	kindString uint8 = 1 << iota
	kindInteger
	kindNumber
	kindBoolean
	kindObject
	kindArray
)

// sampler infers the top-level schema of the records a session moves from
// a sample of their values. Its zero value is ready; a nil sampler samples
// nothing (the session was not asked for datasets).
type sampler struct {
	records int64
	// cols are the columns in the order first seen, index their positions
	// by name.
	cols  []sampledColumn
	index map[string]int
}

type sampledColumn struct {
	name  string
	kinds uint8
	null  bool
	// seen counts the sampled records that have the column: fewer than
	// were sampled means some lack it, which makes it nullable.
	seen int64
}

// observe samples a batch of records (JSON Lines).
func (s *sampler) observe(records []byte) {
	if s == nil {
		return
	}
	take := samplePerBatch
	if left := sampleFirst - s.records; left > int64(take) {
		take = int(left)
	}
	for len(records) > 0 && take > 0 {
		line := records
		if i := bytes.IndexByte(records, '\n'); i >= 0 {
			line, records = records[:i], records[i+1:]
		} else {
			records = nil
		}
		if len(line) == 0 {
			continue
		}
		s.record(line)
		take--
	}
}

// record samples one record; one that is not a JSON object is skipped.
// Records mostly list their members in the same order, so the n-th member
// is looked for first among the columns at n.
func (s *sampler) record(rec []byte) {
	if s.index == nil {
		s.index = map[string]int{}
	}
	s.records++
	n := 0
	scanMembers(rec, func(key []byte, kind uint8, null bool) {
		at := n
		n++
		if at >= len(s.cols) || s.cols[at].name != string(key) {
			var ok bool
			if at, ok = s.index[string(key)]; !ok {
				if len(s.cols) == maxReportedColumns {
					return
				}
				at = len(s.cols)
				s.cols = append(s.cols, sampledColumn{name: string(key)})
				s.index[s.cols[at].name] = at
			}
		}
		c := &s.cols[at]
		c.seen++
		c.kinds |= kind
		c.null = c.null || null
	})
}

// schema is what the sample shows; nil when nothing was sampled.
func (s *sampler) schema() *Schema {
	if s == nil || s.records == 0 {
		return nil
	}
	out := &Schema{Columns: make([]Column, 0, len(s.cols))}
	for _, c := range s.cols {
		out.Columns = append(out.Columns, Column{
			Name:     c.name,
			Type:     kindType(c.kinds),
			Nullable: c.null || c.seen < s.records,
		})
	}
	return out
}

// kindType names a set of value kinds: integers among numbers are numbers,
// and several other kinds are no one type.
func kindType(k uint8) string {
	if k&kindNumber != 0 {
		k &^= kindInteger
	}
	switch k {
	case kindString:
		return TypeString
	case kindInteger:
		return TypeInteger
	case kindNumber:
		return TypeNumber
	case kindBoolean:
		return TypeBoolean
	case kindObject:
		return TypeObject
	case kindArray:
		return TypeArray
	}
	return ""
}

// scanMembers calls fn with the key and value kind of each top-level member
// of a JSON object, without decoding the values: the inference only needs
// their first bytes, and skipping the rest keeps sampling cheap. Malformed
// input ends the scan.
func scanMembers(rec []byte, fn func(key []byte, kind uint8, null bool)) {
	i := skipSpace(rec, 0)
	if i >= len(rec) || rec[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(rec, i)
		if i >= len(rec) || rec[i] != '"' {
			return
		}
		end := skipString(rec, i)
		if end < 0 {
			return
		}
		key := rec[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(rec[i:end], &k) != nil {
				return
			}
			key = []byte(k)
		}
		i = skipSpace(rec, end)
		if i >= len(rec) || rec[i] != ':' {
			return
		}
		i = skipSpace(rec, i+1)
		if i >= len(rec) {
			return
		}
		start := i
		if i = skipValue(rec, i); i < 0 {
			return
		}
		kind, null := valueKind(rec[start:i])
		fn(key, kind, null)
		i = skipSpace(rec, i)
		if i >= len(rec) || rec[i] == '}' {
			return
		}
		if rec[i] != ',' {
			return
		}
		i++
	}
}

// valueKind is the kind of one JSON value.
func valueKind(v []byte) (uint8, bool) {
	switch v[0] {
	case '"':
		return kindString, false
	case '{':
		return kindObject, false
	case '[':
		return kindArray, false
	case 't', 'f':
		return kindBoolean, false
	case 'n':
		return 0, true
	}
	if bytes.ContainsAny(v, ".eE") {
		return kindNumber, false
	}
	return kindInteger, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i], or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
