package postgres

import (
	"testing"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/dbtest"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// TestRecordStaysInStepWithColumns checks the jsonb record follows every
// statement that changes run columns in SQL alone.
func TestRecordStaysInStepWithColumns(t *testing.T) {
	dbtest.ExerciseRecord(t, testpg.Database, func(t testing.TB, s db.Store, runID string) []byte {
		t.Helper()
		row, err := s.(*Store).q.RunGet(t.Context(), runID)
		if err != nil {
			t.Fatal(err)
		}
		return row.Record
	})
}
