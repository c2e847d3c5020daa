package postgres

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Datasets names the table (or the query's result) a session read or wrote,
// with its schema as the database's catalog has it. The URI is
// postgres://host:port/database/schema.table (…/database/query-<hash> for
// a query), without user or password: whoever connects, a table is the same
// dataset.
func (Connector) Datasets(ctx context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	var dsnURL, table, query string
	if req.Role == sdk.RoleSource {
		cfg, err := decodeSource(req.Config)
		if err != nil {
			return nil, err
		}
		dsnURL, table, query = cfg.URL, cfg.Table, cfg.Query
	} else {
		cfg, err := decodeSink(req.Config)
		if err != nil {
			return nil, err
		}
		dsnURL, table = cfg.URL, cfg.Table
	}
	pc, err := pgx.ParseConfig(dsnURL)
	if err != nil {
		return nil, fmt.Errorf("parse postgres url: %w", err)
	}
	conn, err := connect(ctx, dsnURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var name string
	var schema *sdk.Schema
	if query != "" {
		name = tabular.QueryID(query)
		schema, err = querySchema(ctx, conn, query)
	} else {
		name, schema, err = tableSchema(ctx, conn, table)
	}
	if err != nil {
		return nil, err
	}
	return []sdk.Dataset{{URI: datasetURI(pc, name), Schema: schema}}, nil
}

// datasetURI is the canonical URI of a relation of the database pc
// connects to. A Unix socket directory goes into the query, where a path
// is at home.
func datasetURI(pc *pgx.ConnConfig, relation string) string {
	u := url.URL{Scheme: "postgres", Path: "/" + pc.Database + "/" + relation}
	port := strconv.Itoa(int(pc.Port))
	if strings.HasPrefix(pc.Host, "/") {
		u.RawQuery = url.Values{"host": {pc.Host}, "port": {port}}.Encode()
	} else {
		u.Host = net.JoinHostPort(pc.Host, port)
	}
	return u.String()
}

// tableSchema resolves a table to schema.table and reads its columns from
// pg_attribute, in their order. A table that does not exist (a sink whose
// overwrite was discarded) keeps its configured name and has no schema.
func tableSchema(ctx context.Context, conn *pgx.Conn, table string) (string, *sdk.Schema, error) {
	var nsp, rel *string
	if err := conn.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`, quoteTable(table)).Scan(&nsp, &rel); err != nil && err != pgx.ErrNoRows {
		return "", nil, fmt.Errorf("resolve table %s: %w", table, classify(err))
	}
	if nsp == nil || rel == nil {
		return table, nil, nil
	}
	rows, err := conn.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, t.typcategory, t.typname
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, quoteTable(table))
	if err != nil {
		return "", nil, fmt.Errorf("read columns of %s: %w", table, classify(err))
	}
	schema := &sdk.Schema{}
	for rows.Next() {
		var c sdk.Column
		var category, typname string
		if err := rows.Scan(&c.Name, &c.DBType, &c.Nullable, &category, &typname); err != nil {
			return "", nil, fmt.Errorf("read columns of %s: %w", table, classify(err))
		}
		c.Type = jsonType(category, typname)
		schema.Columns = append(schema.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return "", nil, fmt.Errorf("read columns of %s: %w", table, classify(err))
	}
	return *nsp + "." + *rel, schema, nil
}

// querySchema describes a query's result columns by preparing it; a
// result column may always be null as far as the catalog knows.
func querySchema(ctx context.Context, conn *pgx.Conn, query string) (*sdk.Schema, error) {
	sd, err := conn.Prepare(ctx, "", strings.TrimRight(strings.TrimSpace(query), "; \n\t"))
	if err != nil {
		return nil, fmt.Errorf("describe query: %w", classify(err))
	}
	schema := &sdk.Schema{}
	for _, f := range sd.Fields {
		c := sdk.Column{Name: f.Name, Nullable: true}
		var category, typname string
		if err := conn.QueryRow(ctx, `SELECT format_type(oid, NULLIF($2, -1)), typcategory, typname FROM pg_type WHERE oid = $1`,
			f.DataTypeOID, f.TypeModifier).Scan(&c.DBType, &category, &typname); err != nil {
			return nil, fmt.Errorf("describe query column %s: %w", f.Name, classify(err))
		}
		c.Type = jsonType(category, typname)
		schema.Columns = append(schema.Columns, c)
	}
	return schema, nil
}

// jsonType is the JSON type a column's values take in records, from its
// type's pg_type category: the source renders numbers as numbers,
// timestamps and other text as strings, arrays as arrays.
func jsonType(category, typname string) string {
	switch {
	case typname == "int2" || typname == "int4" || typname == "int8" || typname == "oid":
		return sdk.TypeInteger
	case category == "N":
		return sdk.TypeNumber
	case category == "B":
		return sdk.TypeBoolean
	case category == "A":
		return sdk.TypeArray
	case typname == "json" || typname == "jsonb":
		return ""
	}
	return sdk.TypeString
}
