package sqlite_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3/driver"

	"github.com/faucet-dev/faucet/db"
)

// growingTables keep history and grow without bound; no query may read one
// of them whole.
var growingTables = []string{
	"faucet_runs", "faucet_idempotency_claims", "faucet_shards", "faucet_audit", "faucet_run_logs", "faucet_local_outputs",
	"faucet_catalog_datasets", "faucet_catalog_schema_versions", "faucet_catalog_edges", "faucet_catalog_stats",
}

// fullScanAllowed are the queries whose job is to visit every row: finding
// shards whose run is gone means looking at every shard.
var fullScanAllowed = map[string]bool{"ShardPurgeOrphans": true}

// conflictTargets are unique indexes an upsert reads as its ON CONFLICT
// target (LocalOutputUpsert's), which EXPLAIN QUERY PLAN does not show.
var conflictTargets = []string{"faucet_local_outputs_live_path"}

// Every query in sql/sqlite/queries has an index to work with: SQLite's plan
// for it never reads a growing table whole. And every index serves some
// query, so no write pays for an index nothing reads.
func TestQueriesUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := db.Open(t.Context(), "sqlite:"+path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := driver.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	files, err := filepath.Glob(filepath.Join("..", "..", "sql", "sqlite", "queries", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no query files found: %v", err)
	}
	param := regexp.MustCompile(`sqlc\.n?arg\(\w+\)`)
	embed := regexp.MustCompile(`sqlc\.embed\((\w+)\)`)
	usesIndex := regexp.MustCompile(`USING (?:COVERING )?INDEX (\w+)`)
	used := map[string]bool{}
	queries := 0
	for _, index := range conflictTargets {
		used[index] = true
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range strings.Split(string(text), "-- name: ")[1:] {
			name := strings.Fields(chunk)[0]
			body, _, _ := strings.Cut(chunk[strings.Index(chunk, "\n")+1:], ";")
			args := make([]any, len(param.FindAllString(body, -1)))
			body = embed.ReplaceAllString(body, "$1.*")
			rows, err := conn.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+param.ReplaceAllString(body, "?"), args...)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			queries++
			for _, step := range plan {
				if m := usesIndex.FindStringSubmatch(step); m != nil {
					used[m[1]] = true
				}
				for _, table := range growingTables {
					if (step == "SCAN "+table || strings.HasPrefix(step, "SCAN "+table+" ")) && !strings.Contains(step, " USING ") && !fullScanAllowed[name] {
						t.Errorf("%s reads %s whole: %s", name, table, strings.Join(plan, " | "))
					}
				}
			}
		}
	}
	if queries < 40 {
		t.Fatalf("checked %d queries; the query files were not parsed as expected", queries)
	}

	rows, err := conn.QueryContext(t.Context(), `SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var index string
		if err := rows.Scan(&index); err != nil {
			t.Fatal(err)
		}
		if !used[index] {
			t.Errorf("no query uses index %s", index)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
