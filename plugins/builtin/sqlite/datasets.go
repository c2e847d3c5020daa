package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Datasets names the table (or the query's result) a session read or wrote,
// with its schema as the database declares it. The URI is
// sqlite:///absolute/path.db?table=main.name (table=query-<hash> for a
// query).
func (Connector) Datasets(ctx context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	var path, table, query string
	if req.Role == sdk.RoleSource {
		cfg, err := decodeSource(req.Config)
		if err != nil {
			return nil, err
		}
		path, table, query = cfg.Path, cfg.Table, cfg.Query
	} else {
		cfg, err := decodeSink(req.Config)
		if err != nil {
			return nil, err
		}
		path, table = cfg.Path, cfg.Table
	}
	abs, err := sdk.FilesFrom(ctx).Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	db, err := open(ctx, path, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	name := tabular.QueryID(query)
	var schema *sdk.Schema
	if query != "" {
		schema, err = querySchema(ctx, db.DB, query)
	} else {
		s, t := splitTable(table)
		name = s + "." + t
		schema, err = tableSchema(ctx, db.DB, s, t)
	}
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "sqlite", Path: filepath.ToSlash(abs), RawQuery: url.Values{"table": {name}}.Encode()}
	return []sdk.Dataset{{URI: u.String(), Schema: schema}}, nil
}

// tableSchema reads a table's declared columns; nil when it does not exist.
func tableSchema(ctx context.Context, db *sql.DB, schema, table string) (*sdk.Schema, error) {
	rows, err := db.QueryContext(ctx, `SELECT name, type, "notnull", pk FROM pragma_table_info(?, ?) ORDER BY cid`, table, schema)
	if err != nil {
		return nil, fmt.Errorf("describe table %s.%s: %w", schema, table, classify(err))
	}
	defer rows.Close()
	var out *sdk.Schema
	for rows.Next() {
		var c sdk.Column
		var notNull, pk int
		if err := rows.Scan(&c.Name, &c.DBType, &notNull, &pk); err != nil {
			return nil, fmt.Errorf("describe table %s.%s: %w", schema, table, err)
		}
		// SQLite lets a non-integer primary key column hold NULL.
		c.Nullable = notNull == 0 && !(pk > 0 && strings.EqualFold(c.DBType, "INTEGER"))
		c.Type = jsonType(c.DBType)
		if out == nil {
			out = &sdk.Schema{}
		}
		out.Columns = append(out.Columns, c)
	}
	return out, rows.Err()
}

// querySchema describes a query's result columns by their declared types;
// a result column may always be null as far as SQLite knows.
func querySchema(ctx context.Context, db *sql.DB, query string) (*sdk.Schema, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM ("+strings.TrimRight(strings.TrimSpace(query), ";")+") LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("describe query: %w", classify(err))
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, fmt.Errorf("describe query: %w", err)
	}
	out := &sdk.Schema{}
	for _, t := range types {
		out.Columns = append(out.Columns, sdk.Column{Name: t.Name(), DBType: t.DatabaseTypeName(), Type: jsonType(t.DatabaseTypeName()), Nullable: true})
	}
	return out, nil
}

// jsonType is the JSON type a declared column type's values take in
// records, by SQLite's affinity rules (with booleans and JSON, which the
// connector treats as such); an undeclared type holds anything.
func jsonType(declared string) string {
	t := strings.ToUpper(declared)
	switch {
	case strings.Contains(t, "JSON"), t == "":
		return ""
	case strings.Contains(t, "BOOL"):
		return sdk.TypeBoolean
	case strings.Contains(t, "INT"):
		return sdk.TypeInteger
	case strings.Contains(t, "CHAR"), strings.Contains(t, "CLOB"), strings.Contains(t, "TEXT"), strings.Contains(t, "DATE"), strings.Contains(t, "TIME"):
		return sdk.TypeString
	case strings.Contains(t, "BLOB"):
		return ""
	}
	return sdk.TypeNumber
}
