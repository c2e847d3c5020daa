package testpg

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// KillCopy terminates the backend running a COPY into the database at url
// (alone, or last in a query of several statements), waiting until one
// does: the failure a sink's connection dying mid-COPY injects.
func KillCopy(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(5 * time.Millisecond) {
		var killed int
		err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND (query LIKE 'COPY %' OR query LIKE '%; COPY %') AND pid <> pg_backend_pid()`).Scan(&killed)
		if err != nil {
			t.Fatal(err)
		}
		if killed > 0 {
			return
		}
	}
	t.Fatal("no COPY started within a minute")
}
