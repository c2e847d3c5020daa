// Package migrations embeds faucet's schema: each dialect's goose migrations,
// which sqlc also reads as its schema (the queries beside them are compiled
// into the dialects' stores, not embedded). It is named for what it
// provides rather than after its directory, so it never shadows
// database/sql.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/migrations/*.sql sqlite/migrations/*.sql
var files embed.FS

// Postgres and SQLite are each dialect's migrations, rooted at the migration
// files so goose sees them the way the goose CLI does.
var (
	Postgres = sub("postgres/migrations")
	SQLite   = sub("sqlite/migrations")
)

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic("migrations: embedded " + dir + ": " + err.Error())
	}
	return f
}
