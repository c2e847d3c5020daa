package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/internal/testpg"
)

// repoRoot is the clone this test binary was built from.
var repoRoot = filepath.Join("..", "..")

// copyExamples copies the repository's examples/ into dir/examples, so they
// run from a root of their own as they do from the clone's.
func copyExamples(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join(repoRoot, "examples")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(dir, "examples", rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExamples runs every config in examples/ as its comment says, from the
// root of a copy, against a real PostgreSQL database, in an order where each
// finds what an earlier one wrote, and checks what each moved.
func TestExamples(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyExamples(t, dir)
	url := testpg.Database(t)
	env := []string{"PG_URL=" + url}
	db := filepath.Join(dir, "out", "people.db")
	// What the filtering examples move, asked of the data they read once an
	// earlier example wrote it.
	active := func() int {
		n, _ := strconv.Atoi(sqliteRows(t, db, "SELECT count(*) FROM people WHERE active")[0])
		return n
	}
	inPL := func() int {
		var row struct{ N int }
		_ = json.Unmarshal([]byte(pgRows(t, url, "SELECT count(*) AS n FROM people WHERE country = 'PL'")[0]), &row)
		return row.N
	}
	fixed := func(n int) func() int { return func() int { return n } }
	// Every example, with the records it moves.
	examples := []struct {
		name    string
		records func() int
	}{
		{"generate-to-stdout", fixed(3)},
		{"generate-to-jsonl", fixed(1000)},
		{"generate-to-csv", fixed(1000)},
		{"generate-to-sqlite", fixed(1000)},
		{"generate-to-postgres", fixed(1000)},
		{"csv-to-jsonl", fixed(5)},
		{"csv-to-sqlite", fixed(5)},
		{"csv-to-postgres", fixed(5)},
		{"jsonl-to-csv", fixed(5)},
		{"jsonl-to-sqlite", fixed(5)},
		{"jsonl-to-postgres", fixed(5)},
		{"sqlite-to-csv", active},
		{"sqlite-to-jsonl", fixed(1000)},
		{"sqlite-to-postgres", fixed(1000)},
		{"postgres-to-csv", inPL},
		{"postgres-to-jsonl", fixed(1000)},
		{"postgres-to-sqlite", func() int { return 1000 + active() }},
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if !slices.ContainsFunc(examples, func(e struct {
			name    string
			records func() int
		}) bool {
			return e.name == name
		}) {
			t.Errorf("examples/%s.yaml is not exercised here", name)
		}
	}
	if len(files) != len(examples) {
		t.Errorf("examples/ holds %d configs, this test runs %d", len(files), len(examples))
	}
	for _, e := range examples {
		file := "examples/" + e.name + ".yaml"
		mustSucceed(t, runFaucet(t, dir, env, "validate", file))
		want := e.records()
		r := runFaucet(t, dir, env, "run", file)
		mustSucceed(t, r)
		if records := numbers.Sprintf("%d records in ", want); want == 0 || !strings.Contains(r.stderr, "\n"+records) {
			t.Errorf("%s did not move %d records:\n%s", file, want, r.stderr)
		}
		if e.name == "generate-to-stdout" && strings.Count(r.stdout, "\n") != 3 {
			t.Errorf("%s printed %q", file, r.stdout)
		}
	}
	if got := sqliteRows(t, db, "SELECT (SELECT count(*) FROM people), (SELECT count(*) FROM from_postgres), (SELECT count(*) FROM active_from_postgres)"); !equal(got, []string{"1000|1000|" + strconv.Itoa(active())}) {
		t.Errorf("the SQLite tables hold %v", got)
	}
	// Running a keyed example again changes nothing.
	mustSucceed(t, runFaucet(t, dir, env, "run", "examples/generate-to-sqlite.yaml"))
	if got := sqliteRows(t, db, "SELECT count(*) FROM people"); !equal(got, []string{"1000"}) {
		t.Errorf("the upserted table holds %v rows after a second run", got)
	}
}
