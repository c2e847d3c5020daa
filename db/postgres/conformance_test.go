package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
	_ "github.com/faucet-dev/faucet/db/postgres"
	"github.com/faucet-dev/faucet/internal/testpg"
	migrations "github.com/faucet-dev/faucet/sql"
)

// TestConformance runs the shared run-history suite against PostgreSQL.
func TestConformance(t *testing.T) {
	dbtest.Exercise(t, migratedDatabase, peek)
}

// migratedDatabase is a new database at the newest schema: a copy of a
// template migrated once per test server, where migrating each database
// would cost its test several times as much.
func migratedDatabase(t testing.TB) string {
	t.Helper()
	return testpg.Clone(t, schemaTemplate, func(ctx context.Context, url string) error {
		s, err := db.Open(ctx, url, db.Options{})
		if err != nil {
			return err
		}
		return s.Close()
	})
}

// schemaTemplate names the template database after the migrations that
// build it, so a server never hands out a template of other migrations.
var schemaTemplate = func() string {
	h := sha256.New()
	err := fs.WalkDir(migrations.Postgres, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Postgres, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		panic(err)
	}
	return "faucet_schema_" + hex.EncodeToString(h.Sum(nil))[:16]
}()

// peek reads and changes rows behind the Store's back, for the suite.
var peek = dbtest.Peek{
	Submission: func(t testing.TB, url, runID string) []byte {
		t.Helper()
		var doc []byte
		queryRow(t, url, "SELECT submission FROM faucet_runs WHERE run_id = $1", []any{runID}, &doc)
		return doc
	},
	ShardError: func(t testing.TB, url, runID, shardID string) *string {
		t.Helper()
		var msg *string
		queryRow(t, url, "SELECT error FROM faucet_shards WHERE run_id = $1 AND shard_id = $2", []any{runID, shardID}, &msg)
		return msg
	},
	DropRun: func(t testing.TB, url, runID string) {
		t.Helper()
		var n int
		queryRow(t, url, "WITH gone AS (DELETE FROM faucet_runs WHERE run_id = $1 RETURNING 1) SELECT count(*) FROM gone", []any{runID}, &n)
		if n != 1 {
			t.Fatalf("drop run %s: %d rows deleted", runID, n)
		}
	},
	CatalogStats: func(t testing.TB, url, datasetID string) (kept, stale int) {
		t.Helper()
		queryRow(t, url, `SELECT
    coalesce(sum(CASE WHEN b.last_seq > d.stats_recorded - $1 THEN least(b.points, b.last_seq - (d.stats_recorded - $1)) ELSE 0 END), 0)::bigint,
    count(*) FILTER (WHERE b.last_seq <= d.stats_recorded - $1)
FROM faucet_catalog_stat_blocks b JOIN faucet_catalog_datasets d ON d.id = b.dataset_id
WHERE b.dataset_id = $2`, []any{db.StatsKept, datasetID}, &kept, &stale)
		return kept, stale
	},
}

// queryRow runs a one-row statement on a connection of its own.
func queryRow(t testing.TB, url, sql string, args []any, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), sql, args...).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
