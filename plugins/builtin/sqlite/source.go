package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

type sourceConfig struct {
	Path string `json:"path"`
	tabular.Source
}

func decodeSource(config json.RawMessage) (sourceConfig, error) {
	var cfg sourceConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Check()
}

// relation is what the source selects from: the table, or the query as a
// subquery.
func (c sourceConfig) relation() string {
	if c.Table != "" {
		return tabular.QuoteTable(c.Table)
	}
	return "(" + strings.TrimRight(strings.TrimSpace(c.Query), ";") + ")"
}

// shardKey is the quoted column shards split on: the configured key, else
// the table's single-column primary key, else its rowid.
func (c sourceConfig) shardKey(ctx context.Context, db *sql.DB) (string, error) {
	if c.Key != "" {
		return tabular.QuoteIdent(c.Key), nil
	}
	if c.Table == "" {
		return "", errors.New("sharding a query needs key: the column to split on")
	}
	schema, table := splitTable(c.Table)
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?, ?) WHERE pk > 0", table, schema)
	if err != nil {
		return "", fmt.Errorf("read primary key of %s: %w", c.Table, err)
	}
	var pk []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return "", fmt.Errorf("read primary key of %s: %w", c.Table, err)
		}
		pk = append(pk, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("read primary key of %s: %w", c.Table, err)
	}
	if len(pk) == 1 {
		return tabular.QuoteIdent(pk[0]), nil
	}
	var withoutRowid bool
	err = db.QueryRowContext(ctx, "SELECT wr FROM pragma_table_list WHERE schema = ? AND name = ?", schema, table).Scan(&withoutRowid)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("inspect table %s: %w", c.Table, err)
	}
	if withoutRowid {
		return "", fmt.Errorf("table %s has no single-column primary key and no rowid; set key", c.Table)
	}
	return "rowid", nil
}

// splitTable splits "schema.table" (schema defaults to main).
func splitTable(name string) (schema, table string) {
	if s, t, ok := strings.Cut(name, "."); ok {
		return s, t
	}
	return "main", name
}

// Shards splits the source into key ranges holding about the same number of
// rows each, reading the boundaries at evenly spaced offsets of the sorted
// keys.
func (Connector) Shards(ctx context.Context, config json.RawMessage, count int) ([]sdk.Shard, error) {
	cfg, err := decodeSource(config)
	if err != nil {
		return nil, err
	}
	db, err := open(ctx, cfg.Path, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	key, err := cfg.shardKey(ctx, db.DB)
	if err != nil {
		return nil, err
	}
	from := cfg.relation()
	var keyed, nulls int64
	q := fmt.Sprintf("SELECT count(%s), count(*) - count(%s) FROM %s", key, key, from)
	if err := db.QueryRowContext(ctx, q).Scan(&keyed, &nulls); err != nil {
		return nil, fmt.Errorf("count rows: %w", classify(err))
	}
	// One ordered pass over the keys picks the last key of each shard.
	q = fmt.Sprintf("SELECT %s FROM %s WHERE %s IS NOT NULL ORDER BY %s", key, from, key, key)
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read keys: %w", classify(err))
	}
	defer rows.Close()
	var bounds []json.RawMessage
	var estimates []int64
	prev, next := int64(-1), 1
	for off := int64(0); rows.Next() && next < count && int64(next) < keyed; off++ {
		if off != keyed*int64(next)/int64(count)-1 {
			continue
		}
		next++
		var v any
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read keys: %w", err)
		}
		b, err := boundJSON(v)
		if err != nil {
			return nil, err
		}
		if len(bounds) > 0 && string(bounds[len(bounds)-1]) == string(b) {
			continue
		}
		bounds = append(bounds, b)
		estimates = append(estimates, off-prev)
		prev = off
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read keys: %w", classify(err))
	}
	estimates = append(estimates, keyed-1-prev)
	estimates[0] += nulls
	return tabular.RangeShards(bounds, estimates)
}

// boundJSON encodes a key value read from SQLite as a shard bound.
func boundJSON(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case []byte:
		v = string(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("cannot shard on key value %v", x)
		}
	case time.Time:
		v = x.Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode shard bound: %w", err)
	}
	return b, nil
}

// Read emits every row of the table or query (or of the shard's key range)
// as a record whose members follow the column order.
func (Connector) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	cfg, err := decodeSource(req.Config)
	if err != nil {
		return err
	}
	r, err := tabular.DecodeRange(req.Shard)
	if err != nil {
		return err
	}
	db, err := open(ctx, cfg.Path, true)
	if err != nil {
		return err
	}
	defer db.Close()

	q := cfg.Query
	if cfg.Table != "" {
		q = "SELECT * FROM " + cfg.relation()
	}
	var args []any
	key, err := keyIfBounded(ctx, cfg, db.DB, r)
	if err != nil {
		return err
	}
	if key != "" {
		cond, bound, err := r.Where(key, func(int) string { return "?" }, tabular.BoundValue)
		if err != nil {
			return err
		}
		q = "SELECT * FROM " + cfg.relation() + " WHERE " + cond
		args = bound
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("query: %w", classify(err))
	}
	defer rows.Close()
	enc, err := newRowEncoder(rows)
	if err != nil {
		return err
	}
	for n := 1; rows.Next(); n++ {
		if err := rows.Scan(enc.dest...); err != nil {
			return fmt.Errorf("row %d: %w", n, err)
		}
		if err := w.AppendFunc(enc.append); err != nil {
			return fmt.Errorf("row %d: %w", n, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read rows: %w", classify(err))
	}
	return nil
}

// keyIfBounded returns the shard key column when r restricts the read.
func keyIfBounded(ctx context.Context, cfg sourceConfig, db *sql.DB, r tabular.KeyRange) (string, error) {
	if len(r.After) == 0 && len(r.Through) == 0 {
		return "", nil
	}
	return cfg.shardKey(ctx, db)
}

// rowEncoder turns scanned rows into JSON records.
type rowEncoder struct {
	keys []string // each column's name, JSON-encoded, with its colon
	json []bool   // the column is declared JSON: embed its text as JSON
	vals []any
	dest []any
}

func newRowEncoder(rows *sql.Rows) (*rowEncoder, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	e := &rowEncoder{keys: make([]string, len(types)), json: make([]bool, len(types)), vals: make([]any, len(types)), dest: make([]any, len(types))}
	for i, t := range types {
		e.keys[i] = string(sdk.AppendString(nil, t.Name())) + ":"
		e.json[i] = strings.Contains(strings.ToUpper(t.DatabaseTypeName()), "JSON")
		e.dest[i] = &e.vals[i]
	}
	return e, nil
}

func (e *rowEncoder) append(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	for i, v := range e.vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.keys[i]...)
		dst = appendValue(dst, v, e.json[i])
	}
	return append(dst, '}'), nil
}

// appendValue encodes one SQLite value: integers and reals as numbers
// (NaN and infinities, which JSON lacks, as null), text as strings (or as
// JSON in a column declared JSON, when it is valid JSON), blobs as base64.
func appendValue(dst []byte, v any, asJSON bool) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(dst, "null"...)
		}
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		if asJSON && json.Valid([]byte(x)) {
			return append(dst, x...)
		}
		return sdk.AppendString(dst, x)
	case []byte:
		if asJSON && json.Valid(x) {
			return append(dst, x...)
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"')
	case time.Time:
		return sdk.AppendString(dst, x.Format(time.RFC3339Nano))
	default:
		return sdk.AppendString(dst, fmt.Sprint(x))
	}
}
