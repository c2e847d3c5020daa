package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// withPassword puts a password into a test database URL: the test server
// trusts loopback, so the password is never checked, but every catalog
// read must show it nowhere.
func withPassword(t *testing.T, dbURL, password string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

// catalogGet reads a catalog route as the given token and returns its
// status and body.
func catalogGet(t *testing.T, s *server, token, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// awaitDataset waits until the catalog has the dataset of uri with the
// given number of runs, and returns its detail. Recording follows a run's
// terminal record, so a run that reads completed may not be catalogued yet.
func awaitDataset(t *testing.T, s *server, uri string, runs int64) client.CatalogDatasetDetail {
	t.Helper()
	var d client.CatalogDatasetDetail
	testwait.Until(t, time.Minute, func() error {
		resp, err := s.admin().GetCatalogDatasetWithResponse(context.Background(), datasetID(uri))
		if err != nil {
			return err
		}
		if resp.JSON200 == nil {
			return fmt.Errorf("dataset %s: %d %s", uri, resp.StatusCode(), resp.Body)
		}
		if d = *resp.JSON200; d.Runs != runs {
			return fmt.Errorf("dataset %s has %d runs, never %d", uri, d.Runs, runs)
		}
		return nil
	})
	return d
}

func fileURI(path string) string { return "file://" + path }

func datasetID(uri string) string { return db.DatasetID(uri) }

// csvToPostgres loads a csv file into a table; postgresToJSONL exports the
// table to a file: the two pipelines of a chain csv → table → jsonl.
func csvToPostgres(csvPath, sinkURL string) string {
	return fmt.Sprintf("version: 1\nname: load-people\npipeline:\n  source: {type: csv, config: {path: %q}}\n  sink: {type: postgres, config: {url: %q, table: people, write_mode: overwrite}}\n", csvPath, sinkURL)
}

func csvToJSONL(csvPath, out string) string {
	return fmt.Sprintf("version: 1\nname: csv-to-jsonl\npipeline:\n  source: {type: csv, config: {path: %q}}\n  sink: {type: jsonl, config: {path: %q}}\n", csvPath, out)
}

func postgresToJSONL(sourceURL, out string) string {
	return fmt.Sprintf("version: 1\nname: export-people\npipeline:\n  source: {type: postgres, config: {url: %q, table: people}}\n  sink: {type: jsonl, config: {path: %q}}\n", sourceURL, out)
}

func TestCatalogRecordsTheLineageOfRuns(t *testing.T) {
	eachHistory(t, testCatalogRecordsTheLineageOfRuns)
}

func testCatalogRecordsTheLineageOfRuns(t *testing.T, h history) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(authFile, []byte("principals:\n  - {name: vera, token: viewer-token-1, role: viewer}\n  - {name: ada, token: admin-token-1, role: admin}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, serverOpts{history: h.url(t), args: []string{"--auth-config", authFile}, token: "admin-token-1"})
	const password = "catalog-secret-pw-4711"
	sinkDB := testpg.Database(t)
	sinkURL := withPassword(t, sinkDB, password)
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("id,name\n1,ann\n2,bob\n3,cy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	load := s.submit(client.SubmitRequest{Config: csvToPostgres(in, sinkURL)}).RunId
	if rec := s.await(load, client.RunStatusCompleted, client.RunStatusFailed); rec.Status != client.RunStatusCompleted {
		t.Fatalf("csv → postgres: %s %s", rec.Status, deref(rec.Error))
	}
	export := s.submit(client.SubmitRequest{Config: postgresToJSONL(sinkURL, out)}).RunId
	if rec := s.await(export, client.RunStatusCompleted, client.RunStatusFailed); rec.Status != client.RunStatusCompleted {
		t.Fatalf("postgres → jsonl: %s %s", rec.Status, deref(rec.Error))
	}

	pg, err := url.Parse(sinkDB)
	if err != nil {
		t.Fatal(err)
	}
	tableURI := "postgres://" + pg.Host + pg.Path + "/public.people"
	table := awaitDataset(t, s, tableURI, 2)
	awaitDataset(t, s, fileURI(out), 1)
	csvSet := awaitDataset(t, s, fileURI(in), 1)

	// Three datasets, through the API and as the viewer.
	viewer := s.client("viewer-token-1")
	list, err := viewer.ListCatalogDatasetsWithResponse(context.Background(), nil)
	if err != nil || list.JSON200 == nil {
		t.Fatalf("list datasets as the viewer: %v %s", err, list.Body)
	}
	kinds := map[string]string{}
	for _, d := range list.JSON200.Datasets {
		kinds[d.Uri] = d.Kind
	}
	if want := map[string]string{fileURI(in): "csv", tableURI: "postgres", fileURI(out): "jsonl"}; !mapsEqual(kinds, want) {
		t.Fatalf("datasets %v, want %v", kinds, want)
	}
	if !slices.Equal(table.Roles, []client.DatasetRole{"sink", "source"}) || table.Kind != "postgres" || len(table.Upstream) != 1 || len(table.Downstream) != 1 ||
		table.Upstream[0].SrcUri != fileURI(in) || table.Downstream[0].DstUri != fileURI(out) || table.TotalRecords != 6 || len(table.Stats) != 2 {
		t.Errorf("the table's detail: %+v", table)
	}
	// The table's schema is the database's; the csv file's what its values showed.
	if len(table.SchemaTimeline) != 1 || table.SchemaVersions != 1 || table.CurrentSchema == nil ||
		table.CurrentSchema.Properties["id"].XDbType == nil || *table.CurrentSchema.Properties["id"].XDbType != "text" {
		t.Errorf("the table's schema: %+v", table.SchemaTimeline)
	}
	if p := csvSet.CurrentSchema; p == nil || len(p.Properties) != 2 || p.Properties["name"].Type != "string" {
		t.Errorf("the csv file's schema: %+v", csvSet.CurrentSchema)
	}
	if csvSet.Pipeline != "load-people" || csvSet.LastRunId != load || table.LastRunId != export {
		t.Errorf("provenance: csv %s/%s, table last run %s", csvSet.Pipeline, csvSet.LastRunId, table.LastRunId)
	}

	// The lineage chain: the whole graph, and the walk from the csv file.
	lineage := func(params *client.GetCatalogLineageParams) []string {
		t.Helper()
		g, err := viewer.GetCatalogLineageWithResponse(context.Background(), params)
		if err != nil || g.JSON200 == nil {
			t.Fatalf("lineage %+v: %v %s", params, err, g.Body)
		}
		var out []string
		for _, e := range g.JSON200.Edges {
			out = append(out, e.SrcUri+" > "+e.DstUri)
		}
		slices.Sort(out)
		return out
	}
	chain := []string{fileURI(in) + " > " + tableURI, tableURI + " > " + fileURI(out)}
	if got := lineage(nil); !slices.Equal(got, chain) {
		t.Errorf("lineage %v, want %v", got, chain)
	}
	if got := lineage(&client.GetCatalogLineageParams{Root: ptr(datasetID(fileURI(in))), Depth: ptr(int64(2))}); !slices.Equal(got, chain) {
		t.Errorf("lineage from the csv file, depth 2: %v", got)
	}
	if got := lineage(&client.GetCatalogLineageParams{Root: ptr(datasetID(fileURI(in))), Depth: ptr(int64(1))}); len(got) != 1 {
		t.Errorf("lineage from the csv file, depth 1: %v", got)
	}

	// A changed header: one more schema version, whose diff is the column.
	if err := os.WriteFile(in, []byte("id,name,email\n1,ann,a@x.io\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again := s.submit(client.SubmitRequest{Config: csvToJSONL(in, filepath.Join(dir, "again.jsonl"))}).RunId
	if rec := s.await(again, client.RunStatusCompleted, client.RunStatusFailed); rec.Status != client.RunStatusCompleted {
		t.Fatalf("csv (new header) → jsonl: %s %s", rec.Status, deref(rec.Error))
	}
	csvSet = awaitDataset(t, s, fileURI(in), 2)
	if len(csvSet.SchemaTimeline) != 2 || csvSet.SchemaTimeline[0].Diff != nil {
		t.Fatalf("csv timeline after a header change: %+v", csvSet.SchemaTimeline)
	}
	diff := csvSet.SchemaTimeline[1].Diff
	if diff == nil || len(diff.Added) != 1 || diff.Added[0].Column != "email" || len(diff.Removed)+len(diff.Changed)+len(diff.Widened) != 0 {
		t.Errorf("the header change's diff: %+v", diff)
	}

	// Errors: the problem envelope, naming what is wrong.
	for path, want := range map[string]int{
		"/v1/catalog/datasets/0123456789abcdef":               http.StatusNotFound,
		"/v1/catalog/datasets?limit=0":                        http.StatusBadRequest,
		"/v1/catalog/datasets?limit=1001":                     http.StatusBadRequest,
		"/v1/catalog/datasets?cursor=ffffffffffffffff":        http.StatusBadRequest,
		"/v1/catalog/datasets?q=" + strings.Repeat("x", 257):  http.StatusBadRequest,
		"/v1/catalog/lineage?depth=33":                        http.StatusBadRequest,
		"/v1/catalog/lineage?depth=0":                         http.StatusBadRequest,
		"/v1/catalog/lineage?root=" + strings.Repeat("a", 65): http.StatusBadRequest,
		"/v1/catalog/snapshots/nobody":                        http.StatusNotFound,
	} {
		code, body := catalogGet(t, s, "viewer-token-1", path)
		if code != want || !strings.Contains(body, `"error"`) {
			t.Errorf("GET %.60s: %d %s, want %d with the error envelope", path, code, body, want)
		}
	}
	if code, _ := catalogGet(t, s, "", "/v1/catalog/datasets"); code != http.StatusUnauthorized {
		t.Errorf("catalog without a token: %d, want 401", code)
	}

	// The password is nowhere: not in the catalog, the snapshots, the logs
	// or the metrics.
	for _, path := range []string{"/v1/catalog/datasets", "/v1/catalog/lineage", "/v1/catalog/datasets/" + table.Id, "/v1/catalog/snapshots/load-people"} {
		code, body := catalogGet(t, s, "viewer-token-1", path)
		if code != http.StatusOK || strings.Contains(body, password) {
			t.Errorf("GET %s: %d, password shown: %v", path, code, strings.Contains(body, password))
		}
	}
	if code, body := catalogGet(t, s, "", "/metrics"); code != http.StatusOK || strings.Contains(body, password) || !strings.Contains(body, `faucet_catalog_writes_total{kind="lineage",outcome="ok"}`) {
		t.Errorf("/metrics: %d, password shown %v, catalog writes counted %v", code, strings.Contains(body, password), strings.Contains(body, "faucet_catalog_writes_total"))
	}
	if strings.Contains(s.stderr.String(), password) {
		t.Error("the server's log shows the password")
	}

	// The CLI over the same server.
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(faucetBin, append(args, "--server", s.url, "--token", "viewer-token-1")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("faucet %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := cli("catalog", "datasets", "--kind", "postgres"); !strings.Contains(got, tableURI) || strings.Contains(got, fileURI(in)) {
		t.Errorf("catalog datasets --kind postgres:\n%s", got)
	}
	if got := cli("catalog", "show", table.Id); !strings.Contains(got, "upstream") || !strings.Contains(got, fileURI(in)) || !strings.Contains(got, fileURI(out)) {
		t.Errorf("catalog show:\n%s", got)
	}
	if got := cli("catalog", "show", csvSet.Id); !strings.Contains(got, "+email string") {
		t.Errorf("catalog show of the csv file lacks the header change:\n%s", got)
	}
	// By now the csv file also feeds the jsonl file of the header change.
	if got := cli("catalog", "lineage", "--root", csvSet.Id, "--depth", "2"); strings.Count(got, " -> ") != 3 {
		t.Errorf("catalog lineage:\n%s", got)
	}
	var g client.CatalogLineage
	if err := json.Unmarshal([]byte(cli("catalog", "lineage", "--output", "json")), &g); err != nil || len(g.Edges) != 3 {
		t.Errorf("catalog lineage --output json: %+v (%v)", g, err)
	}
	renderDOT(t, cli("catalog", "lineage", "--format", "dot"), fileURI(in), tableURI, fileURI(out))
}

// renderDOT has Graphviz lay the graph out, which fails on any DOT syntax
// error, and checks every dataset is a node of the picture.
func renderDOT(t *testing.T, graph string, labels ...string) {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Fatalf("Graphviz's dot renders the lineage graph to check it (the test command installs graphviz): %v", err)
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(graph)
	svg, err := cmd.Output()
	if err != nil {
		t.Fatalf("dot does not render the graph: %v\n%s", err, graph)
	}
	for _, l := range labels {
		if !strings.Contains(string(svg), l) {
			t.Errorf("the rendered graph lacks %s:\n%s", l, graph)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCatalogLosesNoConcurrentRun: 20 runs into one table at once each
// leave their stats row, and the counts add up.
func TestCatalogLosesNoConcurrentRun(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t), args: []string{"--max-concurrent-runs", "8"}})
		sinkDB := testpg.Database(t)
		cfg := fmt.Sprintf("version: 1\nname: many\npipeline:\n  source: {type: generate, config: {count: 10}}\n  sink: {type: postgres, config: {url: %q, table: events}}\n", sinkDB)
		const runs = 20
		ids := make([]string, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := s.admin().SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: cfg})
				if err != nil || resp.JSON202 == nil {
					t.Errorf("submit: %v", err)
					return
				}
				ids[i] = resp.JSON202.RunId
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if rec := s.await(id, client.RunStatusCompleted, client.RunStatusFailed); rec.Status != client.RunStatusCompleted {
				t.Fatalf("run %s: %s %s", id, rec.Status, deref(rec.Error))
			}
		}
		pg, _ := url.Parse(sinkDB)
		d := awaitDataset(t, s, "postgres://"+pg.Host+pg.Path+"/public.events", runs)
		if len(d.Stats) != runs || d.TotalRecords != runs*10 || len(d.Upstream) != 1 || d.Upstream[0].Runs != runs {
			t.Errorf("after %d concurrent runs: %d stats, %d records, upstream %+v", runs, len(d.Stats), d.TotalRecords, d.Upstream)
		}
		seen := map[string]bool{}
		for _, st := range d.Stats {
			seen[st.RunId] = true
		}
		for _, id := range ids {
			if !seen[id] {
				t.Errorf("run %s has no stats row", id)
			}
		}
	})
}

// TestCatalogRecordsAShardedRunOnce: the shards of one run execute on
// several members; the run is catalogued once, with their counts summed.
func TestCatalogRecordsAShardedRunOnce(t *testing.T) {
	hist := testpg.Database(t)
	members := startCluster(t, 2, hist, "--max-concurrent-runs", "2")
	sinkDB := testpg.Database(t)
	const rows = 4000
	id := members[0].submit(client.SubmitRequest{Config: shardedGenerate(rows, 4, fmt.Sprintf("{type: postgres, config: {url: %q, table: people}}", sinkDB))}).RunId
	if rec := awaitSharded(t, members[1], id); rec.RecordsWritten != rows {
		t.Fatalf("sharded run wrote %d records, want %d", rec.RecordsWritten, rows)
	}
	pg, _ := url.Parse(sinkDB)
	d := awaitDataset(t, members[1].server, "postgres://"+pg.Host+pg.Path+"/public.people", 1)
	if d.TotalRecords != rows || len(d.Stats) != 1 || d.Stats[0].RunId != id || len(d.Upstream) != 1 || d.Upstream[0].LastRecords != rows {
		t.Errorf("the sharded run's record: %d records, stats %+v, upstream %+v", d.TotalRecords, d.Stats, d.Upstream)
	}
	src := awaitDataset(t, members[0].server, "generate:seed=1", 1)
	if src.TotalRecords != rows || src.SchemaVersions != 1 {
		t.Errorf("the generated source: %d records, %d schema versions", src.TotalRecords, src.SchemaVersions)
	}
}

// TestCatalogOff: a server started with --no-catalog runs its runs and
// shows an empty catalog.
func TestCatalogOff(t *testing.T) {
	s := start(t, serverOpts{args: []string{"--no-catalog"}})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	id := s.submit(client.SubmitRequest{Config: generateToFile(5, out)}).RunId
	if rec := s.await(id, client.RunStatusCompleted, client.RunStatusFailed); rec.Status != client.RunStatusCompleted {
		t.Fatalf("run: %s", rec.Status)
	}
	if code, body := catalogGet(t, s, adminToken, "/v1/catalog/datasets"); code != http.StatusOK || !strings.Contains(body, `"datasets":[]`) {
		t.Errorf("datasets with --no-catalog: %d %s", code, body)
	}
}

// TestPlanDiff: faucet plan --diff compares a config file with the snapshot
// of its pipeline's last run, read from the server or from its history,
// and never prints a secret, only that one changed.
func TestPlanDiff(t *testing.T) {
	eachHistory(t, testPlanDiff)
}

func testPlanDiff(t *testing.T, h history) {
	dir := t.TempDir()
	hist := h.url(t)
	const password, rotated = "plan-pw-one-1234", "plan-pw-two-5678"
	s := start(t, serverOpts{history: hist, dataDir: dir, env: []string{"PLAN_PW=" + password}, args: []string{"--config-env", "PLAN_PW"}})
	if hist == "" {
		hist = "sqlite:" + filepath.Join(dir, "history.db")
	}
	sinkDB, err := url.Parse(testpg.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "people.yaml")
	cfg := fmt.Sprintf("version: 1\nname: people-plan\npipeline:\n  source: {type: generate, config: {count: 5}}\n  sink: {type: postgres, config: {url: \"postgres://postgres:${env:PLAN_PW}@%s%s\", table: people}}\n", sinkDB.Host, sinkDB.Path)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := func(pw string, wantExit int, args ...string) string {
		t.Helper()
		cmd := exec.Command(faucetBin, append([]string{"plan", cfgPath}, args...)...)
		cmd.Env = append(os.Environ(), "PLAN_PW="+pw, "FAUCET_TOKEN="+adminToken)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != wantExit {
			t.Fatalf("faucet plan %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantExit, out, stderr.String())
		}
		all := string(out) + stderr.String()
		if strings.Contains(all, password) || strings.Contains(all, rotated) {
			t.Fatalf("faucet plan %s prints a password:\n%s", strings.Join(args, " "), all)
		}
		return string(out)
	}
	server := []string{"--diff", "--server", s.url}
	if out := plan(password, 1, server...); !strings.Contains(out, "no run of pipeline people-plan has recorded a snapshot yet") || !strings.Contains(out, "+ row default: generate → postgres") {
		t.Errorf("before any run:\n%s", out)
	}
	// The url is a secret field of the connector: it shows whole as <secret>.
	if out := plan(password, 0); !strings.Contains(out, `sink.url: "<secret>"`) || !strings.Contains(out, "source.count: 5") {
		t.Errorf("plan without --diff:\n%s", out)
	}

	id := s.submit(client.SubmitRequest{Config: cfg}).RunId
	if rec := s.await(id, client.RunStatusCompleted, client.RunStatusFailed); rec.Status != client.RunStatusCompleted {
		t.Fatalf("run: %s %s", rec.Status, deref(rec.Error))
	}
	testwait.Until(t, time.Minute, func() error {
		if code, body := catalogGet(t, s, adminToken, "/v1/catalog/snapshots/people-plan"); code != http.StatusOK {
			return fmt.Errorf("the run's snapshot: %d %s", code, body)
		}
		return nil
	})
	for _, from := range [][]string{server, {"--diff", "--history", hist}} {
		if out := plan(password, 0, from...); !strings.Contains(out, "pipeline people-plan: no changes against the config run "+id) {
			t.Errorf("plan %v, unchanged:\n%s", from, out)
		}
	}
	out := plan(password, 1, append(server, "--set", "pipeline.sink.config.table=others", "--set", "execution.on_error=stop")...)
	for _, want := range []string{`~ row default: sink.config.table: "people" -> "others"`, `~ setting on_error: "continue" -> "stop"`} {
		if !strings.Contains(out, want) {
			t.Errorf("plan with changes lacks %q:\n%s", want, out)
		}
	}
	if out := plan(rotated, 1, "--diff", "--history", hist); !strings.Contains(out, "~ row default: sink.config.url: (a secret changed)") {
		t.Errorf("plan after the password changed:\n%s", out)
	}
	var d struct {
		Equal   bool `json:"equal"`
		Changes []struct {
			Kind, Path string
			Secret     bool
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(plan(rotated, 1, append(server, "--output", "json")...)), &d); err != nil || d.Equal || len(d.Changes) != 1 || !d.Changes[0].Secret {
		t.Errorf("plan --output json: %+v (%v)", d, err)
	}
}
