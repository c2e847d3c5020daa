package e2e

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// execSQL runs one statement on the Postgres database at url.
func execSQL(url, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// countKeys counts the rows of the people table a sink wrote and their
// distinct ids.
func countKeys(url string) (rows, distinct int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM people").Scan(&rows, &distinct)
	return rows, distinct, err
}
