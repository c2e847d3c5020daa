// Package postgres is the built-in PostgreSQL connector, on pgx. As a source
// it streams a table or a query row by row (nothing is loaded whole) and
// shards by primary-key range; as a sink it appends through COPY, upserts
// through COPY into a staging table and INSERT … ON CONFLICT, or overwrites,
// creating a missing table from the first batch (committed at once, so
// parallel sessions share it). One write session is one transaction: an
// acknowledged batch is part of what Close commits, and Abort leaves the
// database as it was, dropping a table it created that nothing else uses.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connector is the postgres connector.
type Connector struct{}

const urlProperty = `"url": {"type": "string", "minLength": 1, "writeOnly": true, "description": "A libpq connection URL or DSN (postgres://user:password@host:5432/db). Secret."}`

var (
	sourceSchema = tabular.SourceSchema("url", urlProperty,
		"A table or view to read whole (schema.table allowed).",
		"The column shards split on. Defaults to a table's single-column primary key; a query needs it to be sharded.")
	sinkSchema = tabular.SinkSchema("url", urlProperty,
		"append copies rows in; upsert replaces the rows whose key matches (INSERT … ON CONFLICT); overwrite replaces the table's contents, which readers keep seeing until the commit. Every mode commits in one transaction.",
		"The columns identifying a record: upsert matches on them (the table needs a primary key or unique index on exactly these), and a table faucet creates gets them as its primary key.")
)

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:         "postgres",
		Version:      "1.0.0",
		Description:  "PostgreSQL: stream a table or query, write a table through COPY.",
		SourceSchema: sourceSchema,
		SinkSchema:   sinkSchema,
		Shardable:    true,
		WriteModes:   tabular.WriteModes,
		// Every session is a transaction.
		IndependentSessions: true,
		// Savepoints isolate a record the table refuses (isolate.go).
		RejectsRecords: true,
	}
}

// connectTimeout bounds connecting when the URL sets no connect_timeout.
const connectTimeout = 15 * time.Second

// connect opens one connection whose session renders timestamps in UTC and
// ISO format, which the source turns into RFC 3339.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse postgres url: %w", err)
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	cfg.RuntimeParams["datestyle"] = "ISO, MDY"
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "faucet"
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", classify(err))
	}
	return conn, nil
}

// transientCodes are the SQLSTATEs worth a retry: serialization failures,
// deadlocks, a server shutting down or starting, too many connections, and
// lost connections.
var transientCodes = map[string]bool{
	"40001": true, "40P01": true, "57P01": true, "57P02": true, "57P03": true,
	"53300": true, "08000": true, "08001": true, "08003": true, "08004": true, "08006": true,
}

// classify marks the failures a retry may cure as transient: the codes
// above, and network errors (the server unreachable, a connection dropped).
// Anything the server rejected on its merits (bad SQL, a failed password)
// stays permanent.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if transientCodes[pgErr.Code] {
			return sdk.Transient(err)
		}
		return err
	}
	var netErr net.Error
	if errors.As(err, &netErr) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return sdk.Transient(err)
	}
	return err
}

// Check probes a config without moving data: the server is reachable and
// the table or query can be read, or the table can be written (or created).
func (Connector) Check(ctx context.Context, role sdk.Role, config json.RawMessage) ([]sdk.CheckItem, error) {
	var url, table, query, mode string
	if role == sdk.RoleSource {
		cfg, err := decodeSource(config)
		if err != nil {
			return nil, err
		}
		url, table, query = cfg.URL, cfg.Table, cfg.Query
	} else {
		cfg, err := decodeSink(config)
		if err != nil {
			return nil, err
		}
		url, table, mode = cfg.URL, cfg.Table, cfg.WriteMode
	}
	conn, err := connect(ctx, url)
	if err != nil {
		return []sdk.CheckItem{{Name: "connect", Message: err.Error()}}, nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	items := []sdk.CheckItem{{Name: "connect", OK: true}}
	if query != "" {
		if _, err := conn.Prepare(ctx, "", query); err != nil {
			return append(items, sdk.CheckItem{Name: "query", Message: err.Error()}), nil
		}
		return append(items, sdk.CheckItem{Name: "query", OK: true}), nil
	}
	privileges := map[string][]string{"": {"SELECT"}, "append": {"INSERT"}, "upsert": {"INSERT", "UPDATE"}, "overwrite": {"INSERT", "DELETE"}}[mode]
	item := sdk.CheckItem{Name: "permissions", OK: true}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", quoteTable(table)).Scan(&exists); err != nil {
		return append(items, sdk.CheckItem{Name: "permissions", Message: err.Error()}), nil
	}
	if !exists {
		if role == sdk.RoleSource {
			return append(items, sdk.CheckItem{Name: "table", Message: fmt.Sprintf("table %s does not exist", table)}), nil
		}
		var canCreate bool
		err := conn.QueryRow(ctx, "SELECT has_schema_privilege(coalesce($1, current_schema()), 'CREATE')", schemaOf(table)).Scan(&canCreate)
		switch {
		case err != nil:
			item = sdk.CheckItem{Name: "permissions", Message: err.Error()}
		case !canCreate:
			item = sdk.CheckItem{Name: "permissions", Message: fmt.Sprintf("table %s is missing and this user may not create it", table)}
		default:
			item.Message = fmt.Sprintf("table %s is missing; it will be created from the first batch", table)
		}
		return append(items, item), nil
	}
	for _, p := range privileges {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT has_table_privilege(to_regclass($1), $2)", quoteTable(table), p).Scan(&ok); err != nil {
			return append(items, sdk.CheckItem{Name: "permissions", Message: err.Error()}), nil
		}
		if !ok {
			item = sdk.CheckItem{Name: "permissions", Message: fmt.Sprintf("no %s privilege on %s", p, table)}
			break
		}
	}
	return append(items, item), nil
}
