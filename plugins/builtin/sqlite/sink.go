package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

type sinkConfig struct {
	Path string `json:"path"`
	tabular.Sink
}

func decodeSink(config json.RawMessage) (sinkConfig, error) {
	var cfg sinkConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Normalize()
}

// table is an existing table's columns.
type table struct {
	index *tabular.ColumnIndex
	json  []bool // declared JSON: store a value's JSON text as is
}

// describe reads the columns of the named table, or returns nil when it
// does not exist.
func describe(ctx context.Context, tx *sql.Tx, name string) (*table, error) {
	schema, tbl := splitTable(name)
	rows, err := tx.QueryContext(ctx, "SELECT name, type FROM pragma_table_info(?, ?) ORDER BY cid", tbl, schema)
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, classify(err))
	}
	defer rows.Close()
	var names []string
	var isJSON []bool
	for rows.Next() {
		var n, typ string
		if err := rows.Scan(&n, &typ); err != nil {
			return nil, fmt.Errorf("describe table %s: %w", name, err)
		}
		names = append(names, n)
		isJSON = append(isJSON, strings.Contains(strings.ToUpper(typ), "JSON"))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("describe table %s: %w", name, classify(err))
	}
	if len(names) == 0 {
		return nil, nil
	}
	return &table{index: tabular.NewColumnIndex(name, names), json: isJSON}, nil
}

// Open starts the session's transaction and, for overwrite, empties an
// existing table inside it.
func (Connector) Open(ctx context.Context, config json.RawMessage) (sdk.Writer, error) {
	cfg, err := decodeSink(config)
	if err != nil {
		return nil, err
	}
	files := sdk.FilesFrom(ctx)
	_, statErr := files.Stat(cfg.Path)
	db, err := open(ctx, cfg.Path, false)
	if err != nil {
		return nil, err
	}
	// The transaction outlives a cancelled run: Close still commits the
	// acknowledged batches, and only Abort rolls back.
	tx, err := db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("begin transaction: %w", classify(err))
	}
	w := &writer{cfg: cfg, db: db, tx: tx, existed: statErr == nil}
	if err := w.start(ctx); err != nil {
		// The cause matters more than a failure to roll back.
		_ = w.Abort(context.WithoutCancel(ctx))
		return nil, err
	}
	return w, nil
}

type writer struct {
	cfg sinkConfig
	db  *database
	// existed: the database file was there before the session.
	existed bool
	tx      *sql.Tx
	table   *table
	stmt    *sql.Stmt
	vals    [][]byte
	args    []any
}

func (w *writer) start(ctx context.Context) error {
	t, err := describe(ctx, w.tx, w.cfg.Table)
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if w.cfg.WriteMode == "overwrite" {
		if _, err := w.tx.ExecContext(ctx, "DELETE FROM "+tabular.QuoteTable(w.cfg.Table)); err != nil {
			return fmt.Errorf("empty table %s: %w", w.cfg.Table, classify(err))
		}
	}
	return w.use(ctx, t)
}

// use prepares the insert for table t.
func (w *writer) use(ctx context.Context, t *table) error {
	if err := t.index.CheckKey(w.cfg.Key); err != nil {
		return err
	}
	cols := t.index.Names()
	q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", tabular.QuoteTable(w.cfg.Table), tabular.QuoteList(cols), strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
	if w.cfg.WriteMode == "upsert" {
		action := "NOTHING"
		if set := tabular.UpsertSet(cols, w.cfg.Key); set != "" {
			action = "UPDATE SET " + set
		}
		q += fmt.Sprintf(" ON CONFLICT (%s) DO %s", tabular.QuoteList(w.cfg.Key), action)
	}
	stmt, err := w.tx.PrepareContext(ctx, q)
	if err != nil {
		if w.cfg.WriteMode == "upsert" {
			return fmt.Errorf("prepare upsert into %s (it needs a primary key or unique index on %s): %w", w.cfg.Table, strings.Join(w.cfg.Key, ", "), classify(err))
		}
		return fmt.Errorf("prepare insert into %s: %w", w.cfg.Table, classify(err))
	}
	w.table, w.stmt = t, stmt
	w.vals = make([][]byte, len(cols))
	w.args = make([]any, len(cols))
	return nil
}

// create makes the table from the columns the first batch shows.
func (w *writer) create(ctx context.Context, b sdk.Batch) error {
	t, err := tabular.CreateTable(w.cfg.Table, b.All(), w.cfg.Key, columnType)
	if err != nil {
		return err
	}
	if _, err := w.tx.ExecContext(ctx, t.DDL); err != nil {
		return fmt.Errorf("create table %s: %w", w.cfg.Table, classify(err))
	}
	return w.use(ctx, &table{index: tabular.NewColumnIndex(w.cfg.Table, t.Names), json: t.JSON})
}

// columnType is the declared type of a created column. Booleans are
// BOOLEAN so they read back as booleans; objects and arrays are JSON so
// they read back as JSON rather than as strings.
func columnType(k tabular.Kind) string {
	switch k {
	case tabular.KindBool:
		return "BOOLEAN"
	case tabular.KindInteger:
		return "INTEGER"
	case tabular.KindNumber:
		return "REAL"
	case tabular.KindJSON:
		return "JSON"
	default:
		return "TEXT"
	}
}

// Write inserts the batch's records into the session's transaction. With a
// record policy each part of the batch goes under a savepoint, and a record
// the table refuses is isolated (sdk.Isolate) and refused on its own.
func (w *writer) Write(ctx context.Context, b sdk.Batch) error {
	if w.table == nil {
		if err := w.create(ctx, b); err != nil {
			return err
		}
	}
	if _, ok := sdk.RecordPolicyFrom(ctx); !ok {
		return w.insert(ctx, b)
	}
	return sdk.Isolate(ctx, b, func(ctx context.Context, part sdk.Batch) error {
		if _, err := w.tx.ExecContext(ctx, "SAVEPOINT faucet_part"); err != nil {
			return classify(err)
		}
		err := w.insert(ctx, part)
		if err != nil {
			if _, rerr := w.tx.ExecContext(ctx, "ROLLBACK TO faucet_part"); rerr != nil {
				return classify(rerr)
			}
		}
		if _, rerr := w.tx.ExecContext(ctx, "RELEASE faucet_part"); rerr != nil && err == nil {
			err = classify(rerr)
		}
		return err
	})
}

// insert inserts records; a record the table refuses (a constraint, a
// value of the wrong type for a STRICT table) is a *sdk.RecordError.
func (w *writer) insert(ctx context.Context, b sdk.Batch) error {
	n := 0
	for rec := range b.All() {
		n++
		if err := w.table.index.Row(rec, w.vals); err != nil {
			return &sdk.RecordError{Index: n - 1, Err: fmt.Errorf("record %d: %w", n, err)}
		}
		for i, raw := range w.vals {
			v, err := bindValue(raw, w.table.json[i])
			if err != nil {
				return &sdk.RecordError{Index: n - 1, Err: fmt.Errorf("record %d, column %s: %w", n, w.table.index.Names()[i], err)}
			}
			w.args[i] = v
		}
		if _, err := w.stmt.ExecContext(ctx, w.args...); err != nil {
			err = fmt.Errorf("record %d: %w", n, classify(err))
			if errors.Is(err, sqlite3.CONSTRAINT) || errors.Is(err, sqlite3.MISMATCH) || errors.Is(err, sqlite3.TOOBIG) {
				return &sdk.RecordError{Index: n - 1, Err: err}
			}
			return err
		}
	}
	return nil
}

// bindValue converts a raw JSON value into what SQLite stores: NULL,
// integers, reals, text, and JSON text for objects, arrays and anything
// bound for a JSON column.
func bindValue(raw []byte, asJSON bool) (any, error) {
	k := tabular.KindOf(raw)
	switch {
	case k == tabular.KindNull:
		return nil, nil
	case asJSON || k == tabular.KindJSON:
		return string(raw), nil
	case k == tabular.KindBool:
		return raw[0] == 't', nil
	case k == tabular.KindString:
		s, err := tabular.AppendUnquoted(nil, raw)
		return string(s), err
	case k == tabular.KindInteger:
		if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return i, nil
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil, fmt.Errorf("bad number %s", raw)
	}
	return f, nil
}

// Close commits every acknowledged batch and reports the database file to
// faucet's ledger of written files.
func (w *writer) Close(ctx context.Context) error {
	defer w.db.Close()
	if w.stmt != nil {
		w.stmt.Close()
	}
	if err := w.tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", classify(err))
	}
	files := sdk.FilesFrom(ctx)
	if abs, err := files.Abs(w.cfg.Path); err == nil {
		if fi, err := files.Stat(w.cfg.Path); err == nil {
			sdk.ReportOutput(ctx, sdk.OutputFile{Path: abs, Size: fi.Size(), Existed: w.existed})
		}
	}
	return nil
}

// Abort rolls the session back.
func (w *writer) Abort(context.Context) error {
	defer w.db.Close()
	if w.stmt != nil {
		w.stmt.Close()
	}
	if err := w.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("roll back: %w", err)
	}
	return nil
}
