package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
	sqlite3driver "github.com/ncruces/go-sqlite3/driver"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
)

// TestConformance runs the shared run-history suite against SQLite files.
func TestConformance(t *testing.T) {
	newURL := func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }
	dbtest.Exercise(t, newURL, peek)
}

// peek reads and changes rows behind the Store's back, for the suite.
var peek = dbtest.Peek{
	Submission: func(t testing.TB, url, runID string) []byte {
		t.Helper()
		var doc string
		queryRow(t, url, "SELECT submission FROM faucet_runs WHERE run_id = ?", []any{runID}, &doc)
		return []byte(doc)
	},
	ShardError: func(t testing.TB, url, runID, shardID string) *string {
		t.Helper()
		var msg *string
		queryRow(t, url, "SELECT error FROM faucet_shards WHERE run_id = ? AND shard_id = ?", []any{runID, shardID}, &msg)
		return msg
	},
	DropRun: func(t testing.TB, url, runID string) {
		t.Helper()
		var n int
		queryRow(t, url, "DELETE FROM faucet_runs WHERE run_id = ? RETURNING 1", []any{runID}, &n)
	},
	CatalogStats: func(t testing.TB, url, datasetID string) (kept, stale int) {
		t.Helper()
		queryRow(t, url, `SELECT
    coalesce(sum(CASE WHEN b.last_seq > d.stats_recorded - ?1 THEN min(b.points, b.last_seq - (d.stats_recorded - ?1)) ELSE 0 END), 0),
    coalesce(sum(CASE WHEN b.last_seq <= d.stats_recorded - ?1 THEN 1 ELSE 0 END), 0)
FROM faucet_catalog_stat_blocks b JOIN faucet_catalog_datasets d ON d.id = b.dataset_id
WHERE b.dataset_id = ?2`, []any{db.StatsKept, datasetID}, &kept, &stale)
		return kept, stale
	},
}

// queryRow runs a one-row statement on a connection of its own.
func queryRow(t testing.TB, url, query string, args []any, dest ...any) {
	t.Helper()
	conn, err := sqlite3driver.Open(strings.TrimPrefix(url, "sqlite:"), func(c *sqlite3.Conn) error { return c.BusyTimeout(busyTimeout) })
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.QueryRowContext(t.Context(), query, args...).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}
