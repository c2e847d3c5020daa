package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
)

// TestWALIsCheckpointedInTheBackground writes far fewer pages than SQLite's
// automatic checkpoint threshold and checks they still reach the database
// file, copied there by the store's background checkpointer rather than by a
// commit.
func TestWALIsCheckpointedInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := db.Open(ctx, "sqlite:"+path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	size := func(name string) int64 {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	// The migrations reached the file when their connection closed.
	before := size(path)
	now := time.Now().UTC()
	// Rows of some size, so the file has to grow to take them.
	labels := map[string]string{"note": strings.Repeat("x", 2000)}
	for i := range 50 {
		rec := &db.RunRecord{RunID: fmt.Sprintf("r%03d", i), Status: db.StatusQueued, SubmittedAt: now, Labels: labels}
		if err := s.RunSubmit(ctx, rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	if wal := size(path + "-wal"); wal == 0 {
		t.Fatal("the writes did not go to the WAL")
	}
	testwait.Until(t, 30*time.Second, func() error {
		if size(path) == before {
			return fmt.Errorf("the database file stayed at %d bytes: the WAL was never checkpointed", before)
		}
		return nil
	})
}
