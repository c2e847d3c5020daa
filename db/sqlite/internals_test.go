package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
)

// TestInternals runs the checks that read what the Store does not return:
// the record document and a shard's stored error.
func TestInternals(t *testing.T) {
	newURL := func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }
	dbtest.ExerciseInternals(t, newURL, dbtest.Peek{
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
	})
}
