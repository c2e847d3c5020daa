package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

type sinkConfig struct {
	URL string `json:"url"`
	tabular.Sink
}

func decodeSink(config json.RawMessage) (sinkConfig, error) {
	var cfg sinkConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Normalize()
}

// stage is the temporary table an upsert copies each batch into; it is
// dropped with the transaction.
const stage = "faucet_stage"

// stageSeq orders the staged rows so the last record of a key wins.
const stageSeq = "faucet_stage_seq"

// Open connects, starts the session's transaction and, for overwrite,
// deletes an existing table's rows inside it (readers keep seeing them until
// the commit).
func (Connector) Open(ctx context.Context, config json.RawMessage) (sdk.Writer, error) {
	cfg, err := decodeSink(config)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, cfg.URL)
	if err != nil {
		return nil, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("begin transaction: %w", classify(err))
	}
	w := &writer{cfg: cfg, conn: conn, tx: tx, name: quoteTable(cfg.Table)}
	if err := w.start(ctx); err != nil {
		// The cause matters more than a failure to roll back.
		_ = w.Abort(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

type writer struct {
	cfg   sinkConfig
	conn  *pgx.Conn
	tx    pgx.Tx
	name  string // the quoted table name
	index *tabular.ColumnIndex
	json  []bool // the column holds json or jsonb: copy values as JSON text
	// rows holds the batch being written, one raw value per column per
	// record, reused from batch to batch.
	rows    [][]byte
	present []bool
	buf     bytes.Buffer
}

func (w *writer) start(ctx context.Context) error {
	var names []string
	var isJSON []bool
	rows, err := w.tx.Query(ctx, `SELECT a.attname, a.atttypid FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, w.name)
	if err != nil {
		return fmt.Errorf("describe table %s: %w", w.cfg.Table, classify(err))
	}
	for rows.Next() {
		var n string
		var oid uint32
		if err := rows.Scan(&n, &oid); err != nil {
			rows.Close()
			return fmt.Errorf("describe table %s: %w", w.cfg.Table, err)
		}
		names = append(names, n)
		isJSON = append(isJSON, oid == pgtype.JSONOID || oid == pgtype.JSONBOID)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("describe table %s: %w", w.cfg.Table, classify(err))
	}
	if len(names) == 0 {
		return nil
	}
	if w.cfg.WriteMode == "overwrite" {
		if _, err := w.tx.Exec(ctx, "DELETE FROM "+w.name); err != nil {
			return fmt.Errorf("empty table %s: %w", w.cfg.Table, classify(err))
		}
	}
	if w.cfg.WriteMode == "upsert" {
		if err := w.checkUnique(ctx); err != nil {
			return err
		}
	}
	return w.use(ctx, names, isJSON)
}

// checkUnique makes sure ON CONFLICT (key) has a unique index to act on,
// so a misconfigured upsert fails before any data moves.
func (w *writer) checkUnique(ctx context.Context) error {
	rows, err := w.tx.Query(ctx, `SELECT ARRAY(SELECT a.attname::text FROM pg_attribute a
			WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey[0:i.indnkeyatts - 1]) ORDER BY a.attname)
		FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL`, w.name)
	if err != nil {
		return fmt.Errorf("read unique indexes of %s: %w", w.cfg.Table, classify(err))
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return fmt.Errorf("read unique indexes of %s: %w", w.cfg.Table, classify(err))
	}
	key := slices.Sorted(slices.Values(w.cfg.Key))
	for _, cols := range indexes {
		if slices.Equal(cols, key) {
			return nil
		}
	}
	return fmt.Errorf("upsert into %s needs a primary key or unique index on exactly (%s)", w.cfg.Table, strings.Join(w.cfg.Key, ", "))
}

// use sets up writing to a table with the given columns.
func (w *writer) use(ctx context.Context, names []string, isJSON []bool) error {
	w.index = tabular.NewColumnIndex(w.cfg.Table, names)
	w.json = isJSON
	if err := w.index.CheckKey(w.cfg.Key); err != nil {
		return err
	}
	if w.cfg.WriteMode == "upsert" {
		ddl := fmt.Sprintf("CREATE TEMP TABLE %s (LIKE %s INCLUDING DEFAULTS, %s bigint GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP", stage, w.name, stageSeq)
		if _, err := w.tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("create staging table: %w", classify(err))
		}
	}
	return nil
}

// create makes the table from the columns the first batch shows: bigint,
// numeric, boolean, timestamptz, text and jsonb.
func (w *writer) create(ctx context.Context, b sdk.Batch) error {
	t, err := tabular.CreateTable(w.cfg.Table, b.All(), w.cfg.Key, columnType)
	if err != nil {
		return err
	}
	if _, err := w.tx.Exec(ctx, t.DDL); err != nil {
		return fmt.Errorf("create table %s: %w", w.cfg.Table, classify(err))
	}
	return w.use(ctx, t.Names, t.JSON)
}

func columnType(k tabular.Kind) string {
	switch k {
	case tabular.KindBool:
		return "boolean"
	case tabular.KindInteger:
		return "bigint"
	case tabular.KindNumber:
		return "numeric"
	case tabular.KindTime:
		return "timestamptz"
	case tabular.KindJSON:
		return "jsonb"
	default:
		return "text"
	}
}

// Write copies the batch into the table (or, for upsert, into the staging
// table and from there with INSERT … ON CONFLICT). Only the columns some
// record of the batch has are listed, so the others get their defaults.
func (w *writer) Write(ctx context.Context, b sdk.Batch) error {
	if w.index == nil {
		if err := w.create(ctx, b); err != nil {
			return err
		}
	}
	cols := w.index.Names()
	ncols := len(cols)
	w.rows = slices.Grow(w.rows[:0], b.Count*ncols)
	w.present = make([]bool, ncols)
	n := 0
	for rec := range b.All() {
		n++
		start := len(w.rows)
		if start+ncols > cap(w.rows) {
			w.rows = slices.Grow(w.rows, ncols)
		}
		w.rows = w.rows[:start+ncols]
		vals := w.rows[start:]
		if err := w.index.Row(rec, vals); err != nil {
			return fmt.Errorf("record %d: %w", n, err)
		}
		for i, v := range vals {
			if v != nil {
				w.present[i] = true
			}
		}
	}
	var listed []string
	var which []int
	for i, p := range w.present {
		if p {
			listed = append(listed, cols[i])
			which = append(which, i)
		}
	}
	if len(listed) == 0 {
		return fmt.Errorf("batch %d: no record has a column of table %s", b.Seq, w.cfg.Table)
	}
	if w.cfg.WriteMode == "upsert" {
		for _, k := range w.cfg.Key {
			if !slices.Contains(listed, k) {
				return fmt.Errorf("batch %d: no record has key column %q", b.Seq, k)
			}
		}
	}
	if err := w.encode(ncols, which); err != nil {
		return err
	}
	target := w.name
	if w.cfg.WriteMode == "upsert" {
		target = stage
	}
	copySQL := fmt.Sprintf("COPY %s (%s) FROM STDIN", target, tabular.QuoteList(listed))
	if _, err := w.conn.PgConn().CopyFrom(ctx, bytes.NewReader(w.buf.Bytes()), copySQL); err != nil {
		return fmt.Errorf("copy into %s: %w", w.cfg.Table, classify(err))
	}
	if w.cfg.WriteMode != "upsert" {
		return nil
	}
	action := "NOTHING"
	if set := tabular.UpsertSet(listed, w.cfg.Key); set != "" {
		action = "UPDATE SET " + set
	}
	key := tabular.QuoteList(w.cfg.Key)
	upsert := fmt.Sprintf("INSERT INTO %s (%s) SELECT DISTINCT ON (%s) %s FROM %s ORDER BY %s, %s DESC ON CONFLICT (%s) DO %s",
		w.name, tabular.QuoteList(listed), key, tabular.QuoteList(listed), stage, key, stageSeq, key, action)
	if _, err := w.tx.Exec(ctx, upsert); err != nil {
		return fmt.Errorf("upsert into %s: %w", w.cfg.Table, classify(err))
	}
	if _, err := w.tx.Exec(ctx, "TRUNCATE "+stage); err != nil {
		return fmt.Errorf("clear staging table: %w", classify(err))
	}
	return nil
}

// encode renders the staged rows in COPY's text format: tab-separated
// columns, \N for NULL, backslash escapes for tabs, newlines and
// backslashes. JSON numbers and booleans are valid input as they are;
// strings are unquoted; objects and arrays (and anything bound for a json
// column) go as JSON text.
func (w *writer) encode(ncols int, which []int) error {
	w.buf.Reset()
	var scratch []byte
	for r := 0; r+ncols <= len(w.rows); r += ncols {
		vals := w.rows[r : r+ncols]
		for j, i := range which {
			if j > 0 {
				w.buf.WriteByte('\t')
			}
			raw := vals[i]
			k := tabular.KindOf(raw)
			switch {
			case raw == nil || k == tabular.KindNull:
				w.buf.WriteString(`\N`)
			case w.json[i] || k == tabular.KindJSON:
				writeEscaped(&w.buf, raw)
			case k == tabular.KindString:
				var err error
				scratch, err = tabular.AppendUnquoted(scratch[:0], raw)
				if err != nil {
					return fmt.Errorf("record %d, column %s: %w", r/ncols+1, w.index.Names()[i], err)
				}
				writeEscaped(&w.buf, scratch)
			default:
				w.buf.Write(raw)
			}
		}
		w.buf.WriteByte('\n')
	}
	return nil
}

// writeEscaped writes b with COPY text-format escapes.
func writeEscaped(buf *bytes.Buffer, b []byte) {
	start := 0
	for i, c := range b {
		var esc string
		switch c {
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			continue
		}
		buf.Write(b[start:i])
		buf.WriteString(esc)
		start = i + 1
	}
	buf.Write(b[start:])
}

// Close commits every acknowledged batch.
func (w *writer) Close(ctx context.Context) error {
	defer w.conn.Close(context.WithoutCancel(ctx))
	if err := w.tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", classify(err))
	}
	return nil
}

// Abort rolls the session back.
func (w *writer) Abort(ctx context.Context) error {
	defer w.conn.Close(context.WithoutCancel(ctx))
	if err := w.tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("roll back: %w", err)
	}
	return nil
}
