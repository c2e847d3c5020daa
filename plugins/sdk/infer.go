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
	// cols are the columns in the order first seen; index, once there are
	// more than indexFrom of them, their positions by name (fewer are
	// looked for along cols, which a session of a few columns, the most,
	// finds sooner than it would build a map).
	cols  []sampledColumn
	index map[string]int
}

// indexFrom is the most columns a sampler finds by looking along them.
const indexFrom = 16

// maxSharedRecord is the longest first record whose column names are cut
// from one copy of it rather than copied one by one: the names, most of a
// session's, then cost one allocation, and what they hold on to stays
// small. Names that turn up later are copied one by one, so a session of
// ever new names holds no more than one record.
const maxSharedRecord = 4096

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
	s.records++
	n := 0
	// shared is the first record as a string, made once a name of it is
	// new.
	var shared string
	scanMembers(rec, func(key []byte, raw bool, kind uint8, null bool) {
		at := n
		n++
		if at >= len(s.cols) || s.cols[at].name != string(key) {
			if at = s.find(key); at < 0 {
				if len(s.cols) == maxReportedColumns {
					return
				}
				var name string
				switch {
				case raw && s.records == 1 && len(rec) <= maxSharedRecord:
					if shared == "" {
						shared = string(rec)
					}
					// key lies in rec: how far in, its capacity says.
					off := cap(rec) - cap(key)
					name = shared[off : off+len(key)]
				default:
					name = string(key)
				}
				at = s.add(name)
			}
		}
		c := &s.cols[at]
		c.seen++
		c.kinds |= kind
		c.null = c.null || null
	})
}

// find is the position of the column named key, or -1.
func (s *sampler) find(key []byte) int {
	if s.index != nil {
		if at, ok := s.index[string(key)]; ok {
			return at
		}
		return -1
	}
	for i := range s.cols {
		if s.cols[i].name == string(key) {
			return i
		}
	}
	return -1
}

// add appends the column named name and returns its position.
func (s *sampler) add(name string) int {
	at := len(s.cols)
	if s.cols == nil {
		s.cols = make([]sampledColumn, 0, 8)
	}
	s.cols = append(s.cols, sampledColumn{name: name})
	switch {
	case s.index != nil:
		s.index[name] = at
	case len(s.cols) > indexFrom:
		s.index = make(map[string]int, 2*len(s.cols))
		for i, c := range s.cols {
			s.index[c.name] = i
		}
	}
	return at
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
// their first bytes, and skipping the rest keeps sampling cheap. raw says
// the key is a slice of rec (it had no escapes to decode). Malformed input
// ends the scan.
func scanMembers(rec []byte, fn func(key []byte, raw bool, kind uint8, null bool)) {
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
		end, escaped := skipString(rec, i)
		if end < 0 {
			return
		}
		key, raw := rec[i+1:end-1], true
		if escaped {
			var k string
			if json.Unmarshal(rec[i:end], &k) != nil {
				return
			}
			key, raw = []byte(k), false
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
		fn(key, raw, kind, null)
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
	// A number is an integer unless it has a fraction or an exponent.
	for _, c := range v {
		if c == '.' || c == 'e' || c == 'E' {
			return kindNumber, false
		}
	}
	return kindInteger, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i], or -1,
// and whether the string has an escape (a key without one is used as it
// lies in the record).
func skipString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, escaped
}

// skipValue returns the index after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j, _ = skipString(b, j); j < 0 {
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
