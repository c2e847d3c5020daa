package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
)

// TestConformance runs the shared run-history suite against SQLite files.
func TestConformance(t *testing.T) {
	newURL := func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }
	dbtest.Exercise(t, newURL, peek)
}

// peek reads and ages rows behind the Store's back, for the suite.
var peek = dbtest.Peek{
	Document: func(t testing.TB, s db.Store, runID string) []byte {
		t.Helper()
		row, err := s.(*Store).rq.RunGet(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(row.Record)
	},
	ShardError: func(t testing.TB, s db.Store, runID, shardID string) *string {
		t.Helper()
		var msg *string
		err := s.(*Store).r.QueryRowContext(t.Context(),
			"SELECT error FROM faucet_shards WHERE run_id = ? AND shard_id = ?", runID, shardID).Scan(&msg)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	},
	AgeClaim: func(t testing.TB, s db.Store, key string, d time.Duration) {
		t.Helper()
		exec1(t, s, "UPDATE faucet_idempotency_claims SET claimed_at = claimed_at - ? WHERE key = ?", d.Microseconds(), key)
	},
	AgeInstance: func(t testing.TB, s db.Store, instanceID string, d time.Duration) {
		t.Helper()
		exec1(t, s, "UPDATE faucet_instances SET last_heartbeat = last_heartbeat - ? WHERE instance_id = ?", d.Microseconds(), instanceID)
	},
}

// exec1 runs a statement on the writer that must change exactly one row.
func exec1(t testing.TB, s db.Store, sql string, args ...any) {
	t.Helper()
	res, err := s.(*Store).w.ExecContext(t.Context(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("%s changed %d rows (%v), want 1", sql, n, err)
	}
}
