package postgres

import (
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// TestConformance runs the shared run-history suite against PostgreSQL.
func TestConformance(t *testing.T) {
	dbtest.Exercise(t, testpg.Database, peek)
}

// peek reads and ages rows behind the Store's back, for the suite.
var peek = dbtest.Peek{
	Document: func(t testing.TB, s db.Store, runID string) []byte {
		t.Helper()
		row, err := s.(*Store).q.RunGet(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		return row.Record
	},
	ShardError: func(t testing.TB, s db.Store, runID, shardID string) *string {
		t.Helper()
		var msg *string
		err := s.(*Store).pool.QueryRow(t.Context(),
			"SELECT error FROM faucet_shards WHERE run_id = $1 AND shard_id = $2", runID, shardID).Scan(&msg)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	},
	AgeClaim: func(t testing.TB, s db.Store, key string, d time.Duration) {
		t.Helper()
		exec1(t, s, "UPDATE faucet_idempotency_claims SET claimed_at = claimed_at - $2::interval WHERE key = $1", key, d)
	},
	AgeInstance: func(t testing.TB, s db.Store, instanceID string, d time.Duration) {
		t.Helper()
		exec1(t, s, "UPDATE faucet_instances SET last_heartbeat = last_heartbeat - $2::interval WHERE instance_id = $1", instanceID, d)
	},
}

// exec1 runs a statement that must change exactly one row.
func exec1(t testing.TB, s db.Store, sql string, args ...any) {
	t.Helper()
	tag, err := s.(*Store).pool.Exec(t.Context(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("%s changed %d rows, want 1", sql, tag.RowsAffected())
	}
}
