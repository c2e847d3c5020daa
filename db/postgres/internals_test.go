package postgres

import (
	"testing"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// TestInternals runs the checks that read what the Store does not return:
// the jsonb record document and a shard's stored error.
func TestInternals(t *testing.T) {
	dbtest.ExerciseInternals(t, testpg.Database, dbtest.Peek{
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
	})
}
