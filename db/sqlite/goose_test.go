package sqlite_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testgoose"
)

// migrationsDir is sql/sqlite/migrations, seen from this package's directory
// (where go test runs).
var migrationsDir = filepath.Join("..", "..", "sql", "sqlite", "migrations")

// The migration files are plain goose migrations: the stock CLI (with its
// own SQLite driver) applies them up, down and up again, and the store then
// works on the result without migrating anything itself.
func TestGooseCLIAppliesMigrations(t *testing.T) {
	bin := testgoose.Build(t)
	path := filepath.Join(t.TempDir(), "history.db")
	goose := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, append([]string{"-dir", migrationsDir, "sqlite3", path}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("goose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	name, dsn, err := db.ParseURL("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.LookupDialect(name)
	if err != nil {
		t.Fatal(err)
	}
	p, closer, err := d.Migrator(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	newest := db.NewestVersion(p)

	goose("up")
	goose("down-to", "0")
	if got := goose("version"); !strings.Contains(got, "goose: version 0\n") {
		t.Fatalf("after down-to 0: %s", got)
	}
	goose("up")
	if got := goose("version"); !strings.Contains(got, "goose: version "+strconv.FormatInt(newest, 10)+"\n") {
		t.Fatalf("after up: %s, want version %d", got, newest)
	}
	if pending, err := p.HasPending(t.Context()); err != nil || pending {
		t.Fatalf("the store's migrator sees pending migrations after the CLI's up: %v, %v", pending, err)
	}

	s, err := db.Open(t.Context(), "sqlite:"+path, db.Options{InstanceID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := &db.RunRecord{RunID: "r1", Status: db.StatusPending, SubmittedAt: time.Now(), Labels: map[string]string{"via": "goose"}}
	if err := s.RunSubmit(t.Context(), rec, nil); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.RunClaimPending(t.Context(), 1)
	if err != nil || len(claimed) != 1 || claimed[0].Labels["via"] != "goose" {
		t.Fatalf("claim on the CLI-migrated database: %+v, %v", claimed, err)
	}
}
