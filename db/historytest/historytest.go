// Package historytest dumps and loads the raw rows of a run history, for the
// tests that prove a migration keeps every row: a fixture is the rows of
// every table of schema version 1, in a form that loads back exactly. It
// reads and writes the tables directly, beneath the Store, so it works on a
// history of any schema version that still has those tables.
package historytest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	_ "github.com/ncruces/go-sqlite3/driver" // the "sqlite3" database/sql driver

	"github.com/faucet-dev/faucet/db"
)

// Table is one table of schema version 1 and the columns of its primary key,
// which order its rows.
type Table struct {
	Name string
	Key  []string
}

// Tables are the tables of schema version 1, in an order rows load in.
var Tables = []Table{
	{"faucet_runs", []string{"run_id"}},
	{"faucet_idempotency_claims", []string{"key"}},
	{"faucet_instances", []string{"instance_id"}},
	{"faucet_shards", []string{"run_id", "shard_id"}},
	{"faucet_audit", []string{"id"}},
	{"faucet_run_logs", []string{"run_id", "seq"}},
	{"faucet_run_log_truncations", []string{"run_id"}},
}

// Row is one row, column name to value: a JSON number, string, null or (a
// Postgres json or jsonb column) a JSON document. Numbers stay json.Number,
// so a bigint or a float reloads with the digits it was dumped with.
type Row = map[string]any

// Fixture is the rows of every table, by table name, in key order.
type Fixture map[string][]Row

// Dump reads every row of Tables from the history at url (a history URL as
// db.ParseURL takes it).
func Dump(ctx context.Context, url string) (Fixture, error) {
	dialect, dsn, err := db.ParseURL(url)
	if err != nil {
		return nil, err
	}
	f := Fixture{}
	switch dialect {
	case "postgres":
		conn, err := connectPostgres(ctx, dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		for _, t := range Tables {
			var raw []byte
			q := fmt.Sprintf("SELECT coalesce(json_agg(t ORDER BY %s), '[]') FROM %s t", strings.Join(t.Key, ", "), t.Name)
			if err := conn.QueryRow(ctx, q).Scan(&raw); err != nil {
				return nil, fmt.Errorf("dump %s: %w", t.Name, err)
			}
			if f[t.Name], err = decodeRows(raw); err != nil {
				return nil, fmt.Errorf("dump %s: %w", t.Name, err)
			}
		}
	case "sqlite":
		conn, err := sql.Open("sqlite3", dsn)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		for _, t := range Tables {
			if f[t.Name], err = dumpSQLite(ctx, conn, t); err != nil {
				return nil, fmt.Errorf("dump %s: %w", t.Name, err)
			}
		}
	default:
		return nil, fmt.Errorf("historytest: dialect %s", dialect)
	}
	return f, nil
}

// Load inserts the rows of f into the history at url, whose schema must be
// the one f was dumped from.
func Load(ctx context.Context, url string, f Fixture) error {
	dialect, dsn, err := db.ParseURL(url)
	if err != nil {
		return err
	}
	switch dialect {
	case "postgres":
		conn, err := connectPostgres(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		for _, t := range Tables {
			raw, err := json.Marshal(f[t.Name])
			if err != nil {
				return err
			}
			q := fmt.Sprintf("INSERT INTO %s SELECT * FROM json_populate_recordset(NULL::%[1]s, $1::json)", t.Name)
			if _, err := conn.Exec(ctx, q, string(raw)); err != nil {
				return fmt.Errorf("load %s: %w", t.Name, err)
			}
		}
	case "sqlite":
		conn, err := sql.Open("sqlite3", dsn)
		if err != nil {
			return err
		}
		defer conn.Close()
		for _, t := range Tables {
			if err := loadSQLite(ctx, conn, t, f[t.Name]); err != nil {
				return fmt.Errorf("load %s: %w", t.Name, err)
			}
		}
	default:
		return fmt.Errorf("historytest: dialect %s", dialect)
	}
	return nil
}

// Decode reads a fixture written by Encode.
func Decode(raw []byte) (Fixture, error) {
	var tables map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tables); err != nil {
		return nil, err
	}
	f := Fixture{}
	for name, rows := range tables {
		var err error
		if f[name], err = decodeRows(rows); err != nil {
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
	}
	return f, nil
}

// Encode writes f as indented JSON with sorted keys, so a fixture diffs
// line by line.
func (f Fixture) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func decodeRows(raw []byte) ([]Row, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	rows := []Row{}
	if err := dec.Decode(&rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// connectPostgres connects in UTC, so timestamps dump as UTC instants.
func connectPostgres(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	return pgx.ConnectConfig(ctx, cfg)
}

// dumpSQLite reads t's rows. SQLite values are integers, text or null in
// faucet's STRICT tables, so each maps onto one JSON type.
func dumpSQLite(ctx context.Context, conn *sql.DB, t Table) ([]Row, error) {
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT * FROM %s ORDER BY %s", t.Name, strings.Join(t.Key, ", ")))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := []Row{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := Row{}
		for i, c := range cols {
			switch v := vals[i].(type) {
			case int64:
				row[c] = json.Number(fmt.Sprint(v))
			case []byte:
				row[c] = string(v)
			case string, nil:
				row[c] = v
			default:
				return nil, fmt.Errorf("column %s: unexpected %T", c, v)
			}
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func loadSQLite(ctx context.Context, conn *sql.DB, t Table, rows []Row) error {
	for _, row := range rows {
		cols := slices.Sorted(maps.Keys(row))
		args := make([]any, len(cols))
		for i, c := range cols {
			switch v := row[c].(type) {
			case json.Number:
				n, err := v.Int64()
				if err != nil {
					return fmt.Errorf("column %s: %w", c, err)
				}
				args[i] = n
			default:
				args[i] = v
			}
		}
		q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", t.Name, strings.Join(cols, ", "),
			strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}
