// Package sql holds faucet's SQL: per-dialect goose migrations and the
// sqlc-annotated queries compiled into each dialect's store.
package sql

import (
	"embed"
	"io/fs"
)

//go:embed postgres/migrations/*.sql
var postgresFS embed.FS

// PostgresMigrations is the Postgres schema as goose migrations, rooted at
// the migration files so goose sees them the way the goose CLI does.
var PostgresMigrations = func() fs.FS {
	sub, err := fs.Sub(postgresFS, "postgres/migrations")
	if err != nil {
		panic("sql: embedded postgres migrations: " + err.Error())
	}
	return sub
}()
