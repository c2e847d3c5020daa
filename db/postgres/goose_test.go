package postgres_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// buildGoose builds the stock goose CLI at the version go.mod pins, with
// only its Postgres driver.
func buildGoose(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "goose")
	cmd := exec.Command("go", "build", "-o", bin,
		"-tags", "no_clickhouse no_libsql no_mssql no_azuresql no_mysql no_sqlite3 no_vertica no_ydb",
		"github.com/pressly/goose/v3/cmd/goose")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build goose: %v\n%s", err, out)
	}
	return bin
}

// TestGooseCLIAppliesMigrations applies sql/postgres/migrations with the
// stock goose CLI, then uses the schema through the store, and rolls it back
// and forth with the CLI.
func TestGooseCLIAppliesMigrations(t *testing.T) {
	goose := buildGoose(t)
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
	if err := s.RunUpsert(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	if got, err := s.RunClaimPending(t.Context(), 1); err != nil || len(got) != 1 {
		t.Fatalf("claim on the CLI-migrated schema: %v, %v", got, err)
	}
	s.Close()

	run("down")
	run("up")
	s, err = db.Open(t.Context(), url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.RunGet(t.Context(), "r1"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("after goose down and up: %v, want ErrNotFound", err)
	}
}
