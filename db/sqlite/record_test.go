package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
)

// TestRecordStaysInStepWithColumns checks the record document follows every
// statement that changes run columns in SQL alone.
func TestRecordStaysInStepWithColumns(t *testing.T) {
	newURL := func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }
	dbtest.ExerciseRecord(t, newURL, func(t testing.TB, s db.Store, runID string) []byte {
		t.Helper()
		row, err := s.(*Store).rq.RunGet(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(row.Record)
	})
}
