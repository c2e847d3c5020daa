package sql

import (
	"embed"
	"io/fs"
)

//go:embed sqlite/migrations/*.sql
var sqliteFS embed.FS

// SQLiteMigrations is the SQLite schema as goose migrations, rooted at the
// migration files so goose sees them the way the goose CLI does.
var SQLiteMigrations = func() fs.FS {
	sub, err := fs.Sub(sqliteFS, "sqlite/migrations")
	if err != nil {
		panic("sql: embedded sqlite migrations: " + err.Error())
	}
	return sub
}()
