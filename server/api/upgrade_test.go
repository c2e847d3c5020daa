package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/historytest"
	_ "github.com/faucet-dev/faucet/db/postgres"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testgoose"
	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/server/api"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/runlog"
)

// golden is one request of testdata/upgrade/*/golden.json and what the API
// of the revision that wrote the history answered.
type golden struct {
	Request     string          `json:"request"`
	Status      int             `json:"status"`
	ContentType string          `json:"content_type"`
	JSON        json.RawMessage `json:"json,omitempty"`
	Text        *string         `json:"text,omitempty"`
}

// TestUpgrade loads a history written with schema version 1 by the old write
// path (testdata/upgrade, see its README), migrates it to the newest schema
// with the embedded goose provider and, on a copy, with the stock goose CLI,
// and compares every answer of the API with what the old revision answered:
// the status, the content type and the body, byte for byte for log pages,
// as JSON values for the rest. Two things are live in both revisions and
// compared as such: the elapsed_secs of a run that has not finished (now
// minus its start) is compared for presence only, and the elapsed_secs of a
// finished run, which the old revision stored as the runner measured it and
// the new one derives from the stored microsecond timestamps, must agree to
// within a microsecond. Then it migrates the history back down to version 1
// and compares every row of every table with the fixture: equal, except that
// the record document is compared as a JSON value, its timestamps as
// instants and its elapsed_secs to within a microsecond.
func TestUpgrade(t *testing.T) {
	goose := testgoose.Build(t)
	for _, dialect := range []string{"sqlite", "postgres"} {
		dir := filepath.Join("testdata", "upgrade", dialect)
		raw, err := os.ReadFile(filepath.Join(dir, "history.json"))
		if err != nil {
			t.Fatal(err)
		}
		fixture, err := historytest.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		var goldens []golden
		if err := readJSON(filepath.Join(dir, "golden.json"), &goldens); err != nil {
			t.Fatal(err)
		}
		migrations, err := filepath.Abs(filepath.Join("..", "..", "sql", dialect, "migrations"))
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range []string{"provider", "cli"} {
			t.Run(dialect+"/"+tool, func(t *testing.T) {
				t.Parallel()
				url := versionOne(t, dialect, fixture)
				up, down := migrateWithProvider(url)
				if tool == "cli" {
					up, down = migrateWithCLI(goose, migrations, url)
				}
				if err := up(t.Context()); err != nil {
					t.Fatalf("migrate up: %v", err)
				}
				st, err := db.Open(t.Context(), url, db.Options{})
				if err != nil {
					t.Fatal(err)
				}
				replay(t, st, goldens)
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				if err := down(t.Context()); err != nil {
					t.Fatalf("migrate down to version 1: %v", err)
				}
				after, err := historytest.Dump(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				sameRows(t, fixture, after)
			})
		}
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// versionOne returns the URL of a new history at schema version 1 holding
// the rows of fixture.
func versionOne(t *testing.T, dialect string, fixture historytest.Fixture) string {
	t.Helper()
	url := "sqlite:" + filepath.Join(t.TempDir(), "history.db")
	if dialect == "postgres" {
		url = testpg.Database(t)
	}
	p, closer := migrator(t, url)
	defer closer.Close()
	if _, err := p.UpTo(t.Context(), 1); err != nil {
		t.Fatalf("migrate to version 1: %v", err)
	}
	if err := historytest.Load(t.Context(), url, fixture); err != nil {
		t.Fatal(err)
	}
	return url
}

// openMigrator opens the goose provider of url's dialect on url.
func openMigrator(ctx context.Context, url string) (*goose.Provider, io.Closer, error) {
	name, dsn, err := db.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	d, err := db.LookupDialect(name)
	if err != nil {
		return nil, nil, err
	}
	return d.Migrator(ctx, dsn)
}

func migrator(t *testing.T, url string) (*goose.Provider, io.Closer) {
	t.Helper()
	p, closer, err := openMigrator(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	return p, closer
}

// migration moves a history's schema.
type migration func(ctx context.Context) error

// migrateWithProvider migrates through the provider faucet embeds: up as
// db.Open does, down to version 1.
func migrateWithProvider(url string) (up, down migration) {
	step := func(fn func(ctx context.Context, p *goose.Provider) error) migration {
		return func(ctx context.Context) error {
			p, closer, err := openMigrator(ctx, url)
			if err != nil {
				return err
			}
			defer closer.Close()
			return fn(ctx, p)
		}
	}
	up = step(func(ctx context.Context, p *goose.Provider) error { _, err := db.MigrateUp(ctx, p); return err })
	down = step(func(ctx context.Context, p *goose.Provider) error { _, err := p.DownTo(ctx, 1); return err })
	return up, down
}

// migrateWithCLI migrates with the stock goose command over the migration
// files.
func migrateWithCLI(goose, dir, url string) (up, down migration) {
	dialect, dsn, _ := db.ParseURL(url)
	driver := map[string]string{"sqlite": "sqlite3", "postgres": "postgres"}[dialect]
	run := func(args ...string) migration {
		return func(ctx context.Context) error {
			cmd := exec.CommandContext(ctx, goose, append([]string{"-dir", dir, driver, dsn}, args...)...)
			cmd.Env = append(os.Environ(), "GOOSE_NO_COLOR=true")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("goose %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			return nil
		}
	}
	return run("up"), run("down-to", "1")
}

// replay asks the API over st every request of goldens and compares the
// answers with them.
func replay(t *testing.T, st db.Store, goldens []golden) {
	t.Helper()
	hub := runlog.New(runlog.Config{})
	defer hub.Stop(context.Background())
	mux := http.NewServeMux()
	api.New(mux, &api.Deps{Runs: execution.New(execution.Config{}, st, nil, hub), Store: st, Logs: hub, Auth: auth.Disabled()})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, g := range goldens {
		path, ok := strings.CutPrefix(g.Request, "GET ")
		if !ok {
			t.Fatalf("golden request %q is not a GET", g.Request)
		}
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != g.Status || resp.Header.Get("Content-Type") != g.ContentType {
			t.Errorf("%s: %d %s, want %d %s\n%s", g.Request, resp.StatusCode, resp.Header.Get("Content-Type"), g.Status, g.ContentType, body)
			continue
		}
		if g.Text != nil {
			if string(body) != *g.Text {
				t.Errorf("%s: body differs\nwant: %s\n got: %s", g.Request, *g.Text, body)
			}
			continue
		}
		want, got := decodeJSON(t, g.JSON), decodeJSON(t, body)
		for _, pair := range runPairs(path, want, got) {
			sameElapsed(t, g.Request, pair[0], pair[1])
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: body differs\nwant: %s\n got: %s", g.Request, g.JSON, body)
		}
	}
}

// decodeJSON decodes a JSON value keeping numbers as written.
func decodeJSON(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// runPairs returns the run objects of a golden body and the new body, pair
// by pair: the body of GET /v1/runs/{id}, the runs of a listing.
func runPairs(path string, want, got any) [][2]map[string]any {
	w, wok := want.(map[string]any)
	g, gok := got.(map[string]any)
	if !wok || !gok || strings.Contains(path, "/logs") || !strings.HasPrefix(path, "/v1/runs") {
		return nil
	}
	if _, listing := w["runs"]; !listing {
		if _, isRun := w["run_id"]; !isRun {
			return nil
		}
		return [][2]map[string]any{{w, g}}
	}
	wr, _ := w["runs"].([]any)
	gr, _ := g["runs"].([]any)
	var out [][2]map[string]any
	for i := range min(len(wr), len(gr)) {
		a, _ := wr[i].(map[string]any)
		b, _ := gr[i].(map[string]any)
		if a != nil && b != nil {
			out = append(out, [2]map[string]any{a, b})
		}
	}
	return out
}

// sameElapsed compares the elapsed_secs of one run in a golden and a new
// body, and takes it out of both, so the rest compares exactly.
func sameElapsed(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	w, g := want["elapsed_secs"], got["elapsed_secs"]
	delete(want, "elapsed_secs")
	delete(got, "elapsed_secs")
	if (w == nil) != (g == nil) {
		t.Errorf("%s: run %v: elapsed_secs %v, want %v", what, want["run_id"], g, w)
		return
	}
	switch want["status"] {
	case "completed", "failed", "cancelled":
	default:
		return // live: now minus the start, in both revisions
	}
	if w == nil {
		return
	}
	wf, _ := w.(json.Number).Float64()
	gf, _ := g.(json.Number).Float64()
	if math.Abs(wf-gf) >= 1e-6 {
		t.Errorf("%s: run %v: elapsed_secs %v, want %v to the microsecond", what, want["run_id"], g, w)
	}
}

// recordTimes are the keys of a version 1 record document that hold
// timestamps.
var recordTimes = []string{"submitted_at", "started_at", "finished_at"}

// sameRows compares the rows of every table after a migration down with the
// fixture they were loaded from.
func sameRows(t *testing.T, want, got historytest.Fixture) {
	t.Helper()
	for _, table := range historytest.Tables {
		w, g := want[table.Name], got[table.Name]
		if len(w) != len(g) {
			t.Errorf("%s: %d rows, want %d", table.Name, len(g), len(w))
			continue
		}
		for i := range w {
			wr, gr := cloneRow(w[i]), cloneRow(g[i])
			if table.Name == "faucet_runs" {
				sameRecord(t, fmt.Sprint(wr["run_id"]), document(t, wr["record"]), document(t, gr["record"]))
				delete(wr, "record")
				delete(gr, "record")
			}
			if !reflect.DeepEqual(wr, gr) {
				t.Errorf("%s row %d differs\nwant: %v\n got: %v", table.Name, i, wr, gr)
			}
		}
	}
}

func cloneRow(r historytest.Row) historytest.Row {
	out := make(historytest.Row, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

// document is a record column as a JSON object: Postgres dumps jsonb as
// one, SQLite as the text of one.
func document(t *testing.T, v any) map[string]any {
	t.Helper()
	if s, ok := v.(string); ok {
		doc, _ := decodeJSON(t, []byte(s)).(map[string]any)
		return doc
	}
	doc, _ := v.(map[string]any)
	return doc
}

// sameRecord compares a record document restored by the migration down
// with the one the fixture holds.
func sameRecord(t *testing.T, runID string, want, got map[string]any) {
	t.Helper()
	if want == nil || got == nil {
		t.Errorf("run %s: record %v, want %v", runID, got, want)
		return
	}
	want, got = cloneRow(want), cloneRow(got)
	for _, key := range recordTimes {
		if !sameInstant(want[key], got[key]) {
			t.Errorf("run %s: record %s %v, want %v", runID, key, got[key], want[key])
		}
		delete(want, key)
		delete(got, key)
	}
	if w, g := want["elapsed_secs"], got["elapsed_secs"]; (w == nil) != (g == nil) {
		t.Errorf("run %s: record elapsed_secs %v, want %v", runID, g, w)
	} else if w != nil {
		wf, _ := w.(json.Number).Float64()
		gf, _ := g.(json.Number).Float64()
		if math.Abs(wf-gf) >= 1e-6 {
			t.Errorf("run %s: record elapsed_secs %v, want %v to the microsecond", runID, g, w)
		}
	}
	delete(want, "elapsed_secs")
	delete(got, "elapsed_secs")
	if !reflect.DeepEqual(want, got) {
		t.Errorf("run %s: record differs\nwant: %v\n got: %v", runID, want, got)
	}
}

// sameInstant compares two RFC 3339 timestamps (or two nulls) as instants.
func sameInstant(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok || !bok {
		return false
	}
	at, aerr := time.Parse(time.RFC3339Nano, as)
	bt, berr := time.Parse(time.RFC3339Nano, bs)
	return aerr == nil && berr == nil && at.Equal(bt)
}
