package outputs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/fileroots"
)

// ledgerOver returns a ledger over a real SQLite history, a file root, and
// a function writing a file beneath it.
func ledgerOver(t *testing.T) (*Ledger, db.Store, func(name string) pipeline.OutputFile) {
	t.Helper()
	dir := t.TempDir()
	store, err := db.Open(context.Background(), "sqlite:"+filepath.Join(dir, "history.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	root := filepath.Join(dir, "files")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	access, err := fileroots.New(fileroots.Config{Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string) pipeline.OutputFile {
		path := filepath.Join(root, name)
		if err := os.WriteFile(path, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return pipeline.OutputFile{Path: path, Size: 3}
	}
	return New(store, access.Files, nil), store, write
}

func entriesOf(t *testing.T, store db.Store, runID string) []db.LocalOutput {
	t.Helper()
	page, err := store.LocalOutputList(t.Context(), db.LocalOutputFilter{RunID: &runID})
	if err != nil {
		t.Fatal(err)
	}
	return page.Outputs
}

// TestHeldEntriesAreWrittenOnce: what a run's sinks wrote is handed to the
// terminal write that takes it, and written by the ledger itself only when
// nothing takes it (within HoldFor, or by Close), never twice.
func TestHeldEntriesAreWrittenOnce(t *testing.T) {
	l, store, write := ledgerOver(t)

	l.Hold("taken", write("a.jsonl"), nil)
	l.Hold("taken", write("b.jsonl"), nil)
	ws := l.Take("taken")
	if len(ws) != 2 || ws[0].RunID != "taken" || ws[0].FileID == "" || ws[1].SizeBytes != 3 {
		t.Fatalf("taken = %+v", ws)
	}
	if again := l.Take("taken"); again != nil {
		t.Fatalf("a second take = %+v, want nothing", again)
	}

	// Nothing takes it: the ledger writes it on its own once HoldFor passed.
	l.Hold("untaken", write("c.jsonl"), nil)
	testwait.Until(t, 10*time.Second, func() error {
		if n := len(entriesOf(t, store, "untaken")); n != 1 {
			return fmt.Errorf("%d entries of the untaken run", n)
		}
		return nil
	})
	if late := l.Take("untaken"); late != nil {
		t.Fatalf("a take after the ledger wrote the entry = %+v, want nothing", late)
	}

	// Close writes what is held at once.
	l.Hold("closing", write("d.jsonl"), nil)
	l.Close()
	if got := entriesOf(t, store, "closing"); len(got) != 1 || filepath.Base(got[0].Path) != "d.jsonl" {
		t.Fatalf("entries after Close = %+v", got)
	}
	// The taken entries were left to their terminal write: none is written here.
	if got := entriesOf(t, store, "taken"); len(got) != 0 {
		t.Fatalf("the ledger wrote taken entries itself: %+v", got)
	}
	// Write records handed-back entries on their own.
	l.Write(t.Context(), ws)
	if got := entriesOf(t, store, "taken"); len(got) != 2 {
		t.Fatalf("entries written back = %+v", got)
	}
}
