package db

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// DatasetID is a dataset's id: the first 16 hex digits of the sha256 of its
// canonical URI, short enough for a URL and far from colliding at any
// catalog's size.
func DatasetID(uri string) string {
	sum := sha256.Sum256([]byte(uri))
	return hex.EncodeToString(sum[:8])
}

// schemaHash identifies a schema's content whatever the order of its
// columns: the first 16 hex digits of the sha256 of its columns sorted by
// name. Reordering a file's columns is not a new schema version.
func schemaHash(cols []SchemaColumn) string {
	sorted := slices.Clone(cols)
	slices.SortFunc(sorted, func(a, b SchemaColumn) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(sorted)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// encodeSchema is a schema as its column is stored: a JSON array, in
// column order.
func encodeSchema(cols []SchemaColumn) []byte {
	if cols == nil {
		cols = []SchemaColumn{}
	}
	b, _ := json.Marshal(cols)
	return b
}

func decodeSchema(b []byte) ([]SchemaColumn, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var cols []SchemaColumn
	if err := json.Unmarshal(b, &cols); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	return cols, nil
}

// diffSchemas is how next differs from prev; nil when they have the same
// columns.
func diffSchemas(prev, next []SchemaColumn) *SchemaDiff {
	before := make(map[string]SchemaColumn, len(prev))
	for _, c := range prev {
		before[c.Name] = c
	}
	d := &SchemaDiff{}
	seen := make(map[string]bool, len(next))
	for _, c := range next {
		seen[c.Name] = true
		to := c
		old, ok := before[c.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, ColumnChange{Column: c.Name, To: &to})
		case old == c:
		case widens(old, c):
			from := old
			d.Widened = append(d.Widened, ColumnChange{Column: c.Name, From: &from, To: &to})
		default:
			from := old
			d.Changed = append(d.Changed, ColumnChange{Column: c.Name, From: &from, To: &to})
		}
	}
	for _, c := range prev {
		if !seen[c.Name] {
			d.Removed = append(d.Removed, c.Name)
		}
	}
	if len(d.Added)+len(d.Widened)+len(d.Changed)+len(d.Removed) == 0 {
		return nil
	}
	return d
}

// widens reports whether column b accepts every value a did: the same
// database type, the same JSON type or an integer become a number, and
// nullable if a was.
func widens(a, b SchemaColumn) bool {
	sameType := a.Type == b.Type || (a.Type == "integer" && b.Type == "number")
	return a.DBType == b.DBType && sameType && (!a.Nullable || b.Nullable)
}
