// Package sqlite is the built-in SQLite connector, on ncruces/go-sqlite3
// (pure Go, no cgo). As a source it reads a table or a query and shards by
// primary-key range; as a sink it writes a table, creating it from the first
// batch when missing, in append, upsert or overwrite mode. One write session
// is one transaction: an acknowledged batch is part of what Close commits,
// and Abort leaves the database as it was.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver" // also registers the "sqlite3" database/sql driver

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connector is the sqlite connector.
type Connector struct{}

const pathProperty = `"path": {"type": "string", "minLength": 1, "x-faucet-file": %q, "description": %q}`

var (
	sourceSchema = tabular.SourceSchema("path", fmt.Sprintf(pathProperty, "read", "The database file; it must exist."),
		"A table or view to read whole (schema.table for an attached database).",
		"The column shards split on. Defaults to a table's single-column primary key, else its rowid; a query needs it to be sharded.")
	sinkSchema = tabular.SinkSchema("path", fmt.Sprintf(pathProperty, "write", "The database file; it and missing directories are created."),
		"append inserts; upsert replaces the rows whose key matches; overwrite replaces the table's contents. Every mode commits in one transaction.",
		"The columns identifying a record: upsert matches on them, and a table faucet creates gets them as its primary key.")
)

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:         "sqlite",
		Version:      "1.0.0",
		Description:  "SQLite database files: read a table or query, write a table.",
		SourceSchema: sourceSchema,
		SinkSchema:   sinkSchema,
		Shardable:    true,
		WriteModes:   tabular.WriteModes,
		// Every session is a transaction (they take turns writing).
		IndependentSessions: true,
		// Savepoints isolate a record the table refuses.
		RejectsRecords: true,
	}
}

// dsn is the driver's URI for the database file at path (absolute), through
// the VFS named (the default when ""). Reads open it read-only, so a
// mistyped path fails instead of creating an empty file.
func dsn(path, vfsName string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if readOnly {
		q.Set("mode", "ro")
	}
	if vfsName != "" {
		q.Set("vfs", vfsName)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// database is an open database of a session, with the hold on its
// directory that a confined session keeps (see confinedPath).
type database struct {
	*sql.DB
	release func()
}

// Close closes the database, then lets its directory go.
func (d *database) Close() error {
	err := d.DB.Close()
	if d.release != nil {
		d.release()
	}
	return err
}

// open opens the database at path through the session's file access; a
// database to read must already exist.
func open(ctx context.Context, path string, readOnly bool) (*database, error) {
	files := sdk.FilesFrom(ctx)
	if readOnly {
		if _, err := files.Stat(path); err != nil {
			return nil, fmt.Errorf("sqlite database %s: %w", path, err)
		}
	} else if err := files.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	var (
		db      *sql.DB
		release func()
		err     error
	)
	if files.Confined() {
		var name string
		if name, release, err = confinedPath(files, path); err != nil {
			return nil, err
		}
		db, err = driver.Open(dsn(name, confinedVFSName, readOnly), noAttach)
	} else {
		abs, aerr := filepath.Abs(path)
		if aerr != nil {
			return nil, fmt.Errorf("resolve %s: %w", path, aerr)
		}
		db, err = sql.Open("sqlite3", dsn(abs, "", readOnly))
	}
	if err != nil {
		if release != nil {
			release()
		}
		return nil, fmt.Errorf("open sqlite database %s: %w", path, err)
	}
	// One connection: a write transaction and its statements must share it,
	// and a read needs no more.
	db.SetMaxOpenConns(1)
	return &database{DB: db, release: release}, nil
}

// classify marks SQLite's "database is busy" as transient: another writer
// held the lock past the busy timeout, and a retry may well succeed.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED) {
		return sdk.Transient(err)
	}
	return err
}

// Check probes a config without moving data: the database opens, and the
// table or query can be read, or the table can be written.
func (Connector) Check(ctx context.Context, role sdk.Role, config json.RawMessage) ([]sdk.CheckItem, error) {
	if role == sdk.RoleSource {
		cfg, err := decodeSource(config)
		if err != nil {
			return nil, err
		}
		db, err := open(ctx, cfg.Path, true)
		if err != nil {
			return []sdk.CheckItem{{Name: "open", Message: err.Error()}}, nil
		}
		defer db.Close()
		items := []sdk.CheckItem{{Name: "open", OK: true}}
		rows, err := db.QueryContext(ctx, "SELECT * FROM "+cfg.relation()+" LIMIT 0")
		if err != nil {
			return append(items, sdk.CheckItem{Name: "read", Message: err.Error()}), nil
		}
		rows.Close()
		return append(items, sdk.CheckItem{Name: "read", OK: true}), nil
	}
	cfg, err := decodeSink(config)
	if err != nil {
		return nil, err
	}
	db, err := open(ctx, cfg.Path, false)
	if err != nil {
		return []sdk.CheckItem{{Name: "open", Message: err.Error()}}, nil
	}
	defer db.Close()
	items := []sdk.CheckItem{{Name: "open", OK: true}}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return append(items, sdk.CheckItem{Name: "write", Message: classify(err).Error()}), nil
	}
	defer tx.Rollback() // the probe never commits
	t, err := describe(ctx, tx, cfg.Table)
	switch {
	case err != nil:
		items = append(items, sdk.CheckItem{Name: "table", Message: err.Error()})
	case t == nil:
		items = append(items, sdk.CheckItem{Name: "table", OK: true, Message: "missing; it will be created from the first batch"})
	default:
		item := sdk.CheckItem{Name: "table", OK: true}
		if err := t.index.CheckKey(cfg.Key); err != nil {
			item = sdk.CheckItem{Name: "table", Message: err.Error()}
		}
		items = append(items, item)
	}
	return append(items, sdk.CheckItem{Name: "write", OK: true}), nil
}
