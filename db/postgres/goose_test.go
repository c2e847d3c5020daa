package postgres_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testgoose"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// TestGooseCLIAppliesMigrations applies sql/postgres/migrations with the
// stock goose CLI, then uses the schema through the store, and rolls it back
// and forth with the CLI.
func TestGooseCLIAppliesMigrations(t *testing.T) {
	goose := testgoose.Build(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "sql", "postgres", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	url := testpg.Database(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goose, append([]string{"-dir", dir, "postgres", url}, args...)...)
		cmd.Env = append(os.Environ(), "GOOSE_NO_COLOR=true")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("goose %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	run("up")
	s, err := db.Open(t.Context(), url, db.Options{InstanceID: "a"})
	if err != nil {
		t.Fatalf("open a database migrated by the goose CLI: %v", err)
	}
	rec := &db.RunRecord{RunID: "r1", Status: db.StatusPending, SubmittedAt: time.Now()}
	if err := s.RunSubmit(t.Context(), rec, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RunClaimPending(t.Context(), 1); err != nil || len(got) != 1 {
		t.Fatalf("claim on the CLI-migrated schema: %v, %v", got, err)
	}
	s.Close()

	run("down-to", "0")
	run("up")
	s, err = db.Open(t.Context(), url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.RunGet(t.Context(), "r1"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("after goose down-to 0 and up: %v, want ErrNotFound", err)
	}
}
