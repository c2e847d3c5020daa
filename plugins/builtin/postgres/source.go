package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

type sourceConfig struct {
	URL string `json:"url"`
	tabular.Source
}

func decodeSource(config json.RawMessage) (sourceConfig, error) {
	var cfg sourceConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Check()
}

func quoteTable(name string) string { return tabular.QuoteTable(name) }

// schemaOf returns the schema of a qualified table name, or nil.
func schemaOf(name string) *string {
	if s, _, ok := strings.Cut(name, "."); ok {
		return &s
	}
	return nil
}

// relation is what the source selects from: the table, or the query as a
// subquery.
func (c sourceConfig) relation() string {
	if c.Table != "" {
		return quoteTable(c.Table)
	}
	return "(" + strings.TrimRight(strings.TrimSpace(c.Query), "; \n\t") + ") AS faucet_query"
}

// shardKey is the quoted column shards split on: the configured key, else
// the table's single-column primary key.
func (c sourceConfig) shardKey(ctx context.Context, conn *pgx.Conn) (string, error) {
	if c.Key != "" {
		return tabular.QuoteIdent(c.Key), nil
	}
	if c.Table == "" {
		return "", errors.New("sharding a query needs key: the column to split on")
	}
	rows, err := conn.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = to_regclass($1) AND i.indisprimary`, quoteTable(c.Table))
	if err != nil {
		return "", fmt.Errorf("read primary key of %s: %w", c.Table, classify(err))
	}
	pk, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("read primary key of %s: %w", c.Table, classify(err))
	}
	if len(pk) != 1 {
		return "", fmt.Errorf("table %s has no single-column primary key; set key to shard it", c.Table)
	}
	return tabular.QuoteIdent(pk[0]), nil
}

// Shards splits the source into key ranges of about equal row counts, with
// boundaries at evenly spaced percentiles of the key, found in one scan.
func (Connector) Shards(ctx context.Context, config json.RawMessage, count int) ([]sdk.Shard, error) {
	cfg, err := decodeSource(config)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, cfg.URL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	key, err := cfg.shardKey(ctx, conn)
	if err != nil {
		return nil, err
	}
	from := cfg.relation()
	var fractions []float64
	for i := 1; i < count; i++ {
		fractions = append(fractions, float64(i)/float64(count))
	}
	// The counts and the boundaries come from one scan of the source (the
	// ordered-set aggregate skips NULL keys), not one scan each.
	var keyed, nulls int64
	var texts []string
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(%[1]s), count(*) - count(%[1]s), (percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY %[1]s))::text[] FROM %[2]s", key, from),
		fractions).Scan(&keyed, &nulls, &texts); err != nil {
		return nil, fmt.Errorf("find shard boundaries: %w", classify(err))
	}
	var bounds []json.RawMessage
	var estimates []int64
	if count > 1 && keyed > 1 {
		prev := int64(0)
		for i, t := range texts {
			b, _ := json.Marshal(t)
			if len(bounds) > 0 && bytes.Equal(bounds[len(bounds)-1], b) {
				continue
			}
			pos := int64(fractions[i] * float64(keyed))
			bounds = append(bounds, b)
			estimates = append(estimates, pos-prev)
			prev = pos
		}
		estimates = append(estimates, keyed-prev)
	} else {
		estimates = []int64{keyed}
	}
	estimates[0] += nulls
	return tabular.RangeShards(bounds, estimates)
}

// textBound binds a shard bound as text: Postgres casts the literal to the
// key's type, and the bound came from that type's own text output.
func textBound(raw json.RawMessage) (any, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s, nil
}

// Read streams the table or query (or the shard's key range) row by row:
// pgx reads rows off the connection as the loop consumes them, so memory
// stays flat whatever the size of the result.
func (Connector) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	cfg, err := decodeSource(req.Config)
	if err != nil {
		return err
	}
	r, err := tabular.DecodeRange(req.Shard)
	if err != nil {
		return err
	}
	conn, err := connect(ctx, cfg.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))

	q := cfg.Query
	if cfg.Table != "" {
		q = "SELECT * FROM " + cfg.relation()
	}
	// The simple protocol returns every column as text, which maps onto
	// JSON without decoding values into Go types and back.
	args := []any{pgx.QueryExecModeSimpleProtocol}
	if len(r.After) > 0 || len(r.Through) > 0 {
		key, err := cfg.shardKey(ctx, conn)
		if err != nil {
			return err
		}
		cond, bound, err := r.Where(key, func(n int) string { return "$" + strconv.Itoa(n) }, textBound)
		if err != nil {
			return err
		}
		q = "SELECT * FROM " + cfg.relation() + " WHERE " + cond
		args = append(args, bound...)
	}
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("query: %w", classify(err))
	}
	defer rows.Close()
	enc := newRowEncoder(rows.FieldDescriptions())
	for n := 1; rows.Next(); n++ {
		enc.vals = rows.RawValues()
		if err := w.AppendFunc(enc.append); err != nil {
			return fmt.Errorf("row %d: %w", n, err)
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("read rows: %w", classify(err))
	}
	return nil
}

// rowEncoder turns rows of text values into JSON records.
type rowEncoder struct {
	keys  []string // each column's name, JSON-encoded, with its colon
	value []func(dst, text []byte) []byte
	vals  [][]byte
}

func newRowEncoder(fields []pgconn.FieldDescription) *rowEncoder {
	e := &rowEncoder{keys: make([]string, len(fields)), value: make([]func(dst, text []byte) []byte, len(fields))}
	for i, f := range fields {
		e.keys[i] = string(sdk.AppendString(nil, f.Name)) + ":"
		e.value[i] = valueEncoder(f.DataTypeOID)
	}
	return e
}

func (e *rowEncoder) append(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	for i, v := range e.vals {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e.keys[i]...)
		if v == nil {
			dst = append(dst, "null"...)
			continue
		}
		dst = e.value[i](dst, v)
	}
	return append(dst, '}'), nil
}

// valueEncoder picks how a column's text output becomes JSON: numbers and
// booleans as JSON numbers and booleans (NaN and infinities, which JSON
// lacks, as strings), json and jsonb embedded, timestamps as RFC 3339, and
// everything else — text, dates, uuids, arrays, … — as a string of the text.
func valueEncoder(oid uint32) func(dst, text []byte) []byte {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID:
		return appendRaw
	case pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
		return appendNumber
	case pgtype.BoolOID:
		return appendBool
	case pgtype.JSONOID, pgtype.JSONBOID:
		return appendRaw
	case pgtype.TimestamptzOID, pgtype.TimestampOID:
		return appendTimestamp
	default:
		return appendText
	}
}

func appendRaw(dst, text []byte) []byte { return append(dst, text...) }

func appendText(dst, text []byte) []byte {
	return sdk.AppendString(dst, string(text))
}

func appendNumber(dst, text []byte) []byte {
	if len(text) > 0 && (text[0] == 'N' || text[0] == 'I' || (text[0] == '-' && len(text) > 1 && text[1] == 'I')) {
		return appendText(dst, text)
	}
	return append(dst, text...)
}

func appendBool(dst, text []byte) []byte {
	if len(text) > 0 && text[0] == 't' {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

// appendTimestamp rewrites ISO output ("2024-03-01 10:00:00.5+00") as RFC
// 3339 ("2024-03-01T10:00:00.5Z"). The session runs in UTC, so timestamptz
// always ends in +00; a timestamp without zone keeps none. Values outside
// RFC 3339 (infinity, BC dates) pass as text.
func appendTimestamp(dst, text []byte) []byte {
	if len(text) < 19 || text[10] != ' ' || bytes.HasSuffix(text, []byte(" BC")) {
		return appendText(dst, text)
	}
	dst = append(dst, '"')
	dst = append(dst, text[:10]...)
	dst = append(dst, 'T')
	rest := text[11:]
	switch {
	case bytes.HasSuffix(rest, []byte("+00")):
		dst = append(dst, rest[:len(rest)-3]...)
		dst = append(dst, 'Z')
	case len(rest) > 3 && (rest[len(rest)-3] == '+' || rest[len(rest)-3] == '-'):
		dst = append(dst, rest...)
		dst = append(dst, ":00"...)
	default:
		dst = append(dst, rest...)
	}
	return append(dst, '"')
}
