package tabular

import (
	"fmt"
	"iter"
	"strings"
	"time"
)

// Kind is the JSON type of a value, refined where a table column cares:
// integers apart from other numbers, RFC 3339 timestamps apart from other
// strings.
type Kind uint8

// The kinds, from the most to the least specific.
const (
	KindNull Kind = iota
	KindBool
	KindInteger
	KindNumber
	KindTime
	KindString
	KindJSON // an object or an array
)

// KindOf classifies a raw JSON value. Strings are KindString: telling
// timestamps apart costs a parse, which only column inference pays.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return KindNull
	}
	switch raw[0] {
	case 'n':
		return KindNull
	case 't', 'f':
		return KindBool
	case '"':
		return KindString
	case '{', '[':
		return KindJSON
	}
	for _, c := range raw {
		if c == '.' || c == 'e' || c == 'E' {
			return KindNumber
		}
	}
	return KindInteger
}

// merge is the kind of a column holding values of kinds a and b: nulls fit
// anywhere, integers widen to numbers, timestamps to strings, and any other
// mix is stored as text.
func merge(a, b Kind) Kind {
	switch {
	case a == b || b == KindNull:
		return a
	case a == KindNull:
		return b
	case (a == KindInteger && b == KindNumber) || (a == KindNumber && b == KindInteger):
		return KindNumber
	default:
		return KindString
	}
}

// Column is a column inferred from records.
type Column struct {
	Name string
	Kind Kind
}

// InferColumns derives table columns from records: every key that appears,
// in first-seen order, with the kind that holds all of its values. A column
// that is only ever null is text.
func InferColumns(records iter.Seq[[]byte]) ([]Column, error) {
	var cols []Column
	index := map[string]int{}
	var scratch []byte
	for rec := range records {
		err := Fields(rec, func(rawKey, value []byte) error {
			i, ok := index[string(rawKey)]
			if !ok {
				name, err := Key(rawKey)
				if err != nil {
					return err
				}
				i = len(cols)
				index[string(rawKey)] = i
				cols = append(cols, Column{Name: name})
			}
			k := KindOf(value)
			if k == KindString {
				var err error
				scratch, err = AppendUnquoted(scratch[:0], value)
				if err != nil {
					return err
				}
				if _, err := time.Parse(time.RFC3339Nano, string(scratch)); err == nil {
					k = KindTime
				}
			}
			cols[i].Kind = merge(cols[i].Kind, k)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range cols {
		if cols[i].Kind == KindNull {
			cols[i].Kind = KindString
		}
	}
	return cols, nil
}

// QuoteIdent quotes one SQL identifier the standard way (both SQLite and
// PostgreSQL): in double quotes, with embedded quotes doubled.
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteTable quotes a table name, treating "schema.table" as two parts.
func QuoteTable(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = QuoteIdent(p)
	}
	return strings.Join(parts, ".")
}

// QuoteList quotes names and joins them with commas.
func QuoteList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = QuoteIdent(n)
	}
	return strings.Join(quoted, ", ")
}

// UpsertSet renders the SET list of "ON CONFLICT (key) DO UPDATE" that
// overwrites every non-key column with the incoming row ("excluded" names
// it in both dialects). With only key columns there is nothing to update.
func UpsertSet(cols, key []string) string {
	isKey := map[string]bool{}
	for _, k := range key {
		isKey[k] = true
	}
	var sets []string
	for _, c := range cols {
		if !isKey[c] {
			sets = append(sets, fmt.Sprintf("%s = excluded.%s", QuoteIdent(c), QuoteIdent(c)))
		}
	}
	return strings.Join(sets, ", ")
}

// ColumnIndex maps column names to their positions, with the checks both
// sinks make on records against a table's columns.
type ColumnIndex struct {
	table string
	names []string
	pos   map[string]int
	// layout is the members of the last record Row split, in order: records
	// from one source list the same keys in the same order, so each member's
	// column is found by comparing its raw key with the one at its position
	// instead of hashing it into pos.
	layout []member
}

// member is one position of a record's layout: its raw key and its column.
type member struct {
	raw []byte
	col int
}

// NewColumnIndex indexes the columns of table.
func NewColumnIndex(table string, names []string) *ColumnIndex {
	pos := make(map[string]int, len(names))
	for i, n := range names {
		pos[n] = i
	}
	return &ColumnIndex{table: table, names: names, pos: pos}
}

// Names returns the columns in table order.
func (c *ColumnIndex) Names() []string { return c.names }

// Row splits rec into vals, one raw JSON value per column (nil for a column
// the record lacks), rejecting members that are not columns of the table.
func (c *ColumnIndex) Row(rec []byte, vals [][]byte) error {
	clear(vals)
	var m members
	if err := m.start(rec); err != nil {
		return err
	}
	for k := 0; ; k++ {
		rawKey, value, ok, err := m.next()
		if err != nil || !ok {
			return err
		}
		if k < len(c.layout) && string(c.layout[k].raw) == string(rawKey) {
			vals[c.layout[k].col] = value
			continue
		}
		i, err := c.column(rawKey)
		if err != nil {
			return err
		}
		at := member{raw: append([]byte(nil), rawKey...), col: i}
		if k < len(c.layout) {
			c.layout[k] = at
		} else {
			c.layout = append(c.layout, at)
		}
		vals[i] = value
	}
}

// column finds the column of a raw key from Fields, or fails for a key
// that is not a column of the table.
func (c *ColumnIndex) column(rawKey []byte) (int, error) {
	if i, ok := c.pos[string(rawKey)]; ok {
		return i, nil
	}
	name, err := Key(rawKey)
	if err != nil {
		return 0, err
	}
	i, ok := c.pos[name]
	if !ok {
		return 0, fmt.Errorf("field %q is not a column of table %s", name, c.table)
	}
	return i, nil
}

// CheckKey verifies that every key column is a column of the table.
func (c *ColumnIndex) CheckKey(key []string) error {
	for _, k := range key {
		if _, ok := c.pos[k]; !ok {
			return fmt.Errorf("key column %q is not a column of table %s (columns: %s)", k, c.table, strings.Join(c.names, ", "))
		}
	}
	return nil
}

// NewTable is a table a sink creates from the columns its first batch shows.
type NewTable struct {
	// DDL is the CREATE TABLE statement.
	DDL   string
	Names []string
	// JSON marks the columns that hold objects or arrays.
	JSON []bool
}

// CreateTable infers the columns of records and renders the CREATE TABLE for
// them, with typeOf naming each kind's column type in the dialect and key,
// when set, as the primary key.
func CreateTable(table string, records iter.Seq[[]byte], key []string, typeOf func(Kind) string) (*NewTable, error) {
	cols, err := InferColumns(records)
	if err != nil {
		return nil, fmt.Errorf("infer columns: %w", err)
	}
	t := &NewTable{Names: make([]string, len(cols)), JSON: make([]bool, len(cols))}
	defs := make([]string, len(cols))
	for i, c := range cols {
		t.Names[i] = c.Name
		t.JSON[i] = c.Kind == KindJSON
		defs[i] = QuoteIdent(c.Name) + " " + typeOf(c.Kind)
	}
	if err := NewColumnIndex(table, t.Names).CheckKey(key); err != nil {
		return nil, err
	}
	if len(key) > 0 {
		defs = append(defs, "PRIMARY KEY ("+QuoteList(key)+")")
	}
	t.DDL = fmt.Sprintf("CREATE TABLE %s (%s)", QuoteTable(table), strings.Join(defs, ", "))
	return t, nil
}
