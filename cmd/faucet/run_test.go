package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/ncruces/go-sqlite3/driver"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// faucetBin is the faucet binary the tests run, built once (without -race,
// for speed) so every test goes through real plugin processes.
var faucetBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faucet-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Commands run in this process (the migrate tests) must not find the
	// data directory of whoever runs the tests.
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	code := func() int {
		defer os.RemoveAll(dir)
		faucetBin = filepath.Join(dir, "faucet")
		cmd := exec.Command("go", "build", "-o", faucetBin, ".")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build faucet: %v\n", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// result is what one faucet invocation did.
type result struct {
	stdout, stderr string
	code           int
}

// command prepares faucet with args in dir, isolated from any plugins the
// machine has installed.
func command(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(faucetBin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, ".data")}, env...)
	return cmd
}

// runFaucet runs the binary to completion and checks it left no process behind.
func runFaucet(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := command(t, dir, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run faucet %v: %v", args, err)
	}
	assertNoPlugins(t, dir)
	return res
}

// assertNoPlugins fails when a process of the test binary started for the
// test working in dir (a plugin of a faucet that has exited) is still
// alive. Plugins inherit HOME, which command sets to dir, and nothing else
// tells the processes of tests running in parallel apart.
func assertNoPlugins(t *testing.T, dir string) {
	t.Helper()
	// A killed plugin may take a moment to be reaped by init, longer on a
	// loaded machine.
	err := testwait.Wait(30*time.Second, func() error {
		if pids := faucetProcesses(dir); len(pids) > 0 {
			return fmt.Errorf("faucet processes left behind: %v", pids)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func faucetProcesses(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != faucetBin {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), []byte("\x00HOME="+dir+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sqliteRows returns query's rows from a SQLite file as "a|b|c" strings.
func sqliteRows(t *testing.T, path, query string) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pgRows returns query's rows, each as its row_to_json text.
func pgRows(t *testing.T, url, query string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT row_to_json(q)::text FROM ("+query+") q")
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

func mustSucceed(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("faucet exited %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestRunJSONLToSQLiteAppendAndUpsert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.jsonl"), `{"id": 1, "name": "ada", "tags": ["x"]}
{"id": 2, "name": "grace", "tags": []}
`)
	writeFile(t, filepath.Join(dir, "append.yaml"), `version: 1
pipeline:
  source: {type: jsonl, config: {path: in/a.jsonl}}
  sink: {type: sqlite, config: {path: out/db.sqlite, table: people, key: [id]}}
`)
	r := runFaucet(t, dir, nil, "run", "append.yaml")
	mustSucceed(t, r)
	if !strings.Contains(r.stderr, "2 records in") {
		t.Errorf("summary missing:\n%s", r.stderr)
	}
	want := []string{`1|ada|["x"]`, `2|grace|[]`}
	if got := sqliteRows(t, filepath.Join(dir, "out", "db.sqlite"), "SELECT id, name, tags FROM people ORDER BY id"); !equal(got, want) {
		t.Errorf("after append: %v, want %v", got, want)
	}

	writeFile(t, filepath.Join(dir, "in", "b.jsonl"), `{"id": 2, "name": "grace hopper", "tags": ["navy"]}
{"id": 3, "name": "edsger", "tags": null}
`)
	r = runFaucet(t, dir, nil, "run", "append.yaml",
		"--set", "pipeline.source.config.path=in/b.jsonl",
		"--set", "pipeline.sink.config.write_mode=upsert")
	mustSucceed(t, r)
	want = []string{`1|ada|["x"]`, `2|grace hopper|["navy"]`, `3|edsger|<nil>`}
	if got := sqliteRows(t, filepath.Join(dir, "out", "db.sqlite"), "SELECT id, name, tags FROM people ORDER BY id"); !equal(got, want) {
		t.Errorf("after upsert: %v, want %v", got, want)
	}
}

func equal(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

func TestRunSQLiteToPostgresToJSONL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := testpg.Database(t)
	db := filepath.Join(dir, "src.db")
	writeFile(t, filepath.Join(dir, "seed.yaml"), fmt.Sprintf(`version: 1
pipeline:
  source: {type: generate, config: {count: 5000, seed: 9}}
  sink: {type: sqlite, config: {path: %q, table: orders}}
`, db))
	mustSucceed(t, runFaucet(t, dir, nil, "run", "seed.yaml"))

	// sqlite → postgres, the URL coming from the environment.
	writeFile(t, filepath.Join(dir, "to-pg.yaml"), fmt.Sprintf(`version: 1
pipeline:
  source: {type: sqlite, config: {path: %q, table: orders}}
  sink: {type: postgres, config: {url: "${env:PG_URL}", table: public.orders, key: [id]}}
`, db))
	r := runFaucet(t, dir, []string{"PG_URL=" + url}, "run", "to-pg.yaml")
	mustSucceed(t, r)
	if strings.Contains(r.stderr, url) {
		t.Errorf("the database URL (a secret) appears in the output:\n%s", r.stderr)
	}
	count := pgRows(t, url, "SELECT count(*) AS n, sum(id) AS s FROM orders")
	if !equal(count, []string{`{"n":5000,"s":12502500}`}) {
		t.Errorf("postgres holds %v", count)
	}

	// postgres → jsonl, sharing nothing with the steps before but the data.
	writeFile(t, filepath.Join(dir, "from-pg.yaml"), `version: 1
pipeline:
  source: {type: postgres, config: {url: "${env:PG_URL}", query: "SELECT * FROM orders ORDER BY id"}}
  sink: {type: jsonl, config: {path: out/orders.jsonl}}
`)
	mustSucceed(t, runFaucet(t, dir, []string{"PG_URL=" + url}, "run", "from-pg.yaml"))
	f, err := os.Open(filepath.Join(dir, "out", "orders.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	id := int64(0)
	for sc.Scan() {
		id++
		var got, want map[string]any
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("line %d: %v", id, err)
		}
		if err := json.Unmarshal(generate.AppendRow(nil, 9, id), &want); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("record %d went through sqlite and postgres as\n%v\nwant\n%v", id, got, want)
		}
	}
	if id != 5000 {
		t.Errorf("jsonl holds %d records, want 5000", id)
	}
}

func TestRunGenerateToPostgres(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := testpg.Database(t)
	writeFile(t, filepath.Join(dir, "gen.json"), `{
  "version": 1,
  "vars": {"rows": 60000},
  "pipeline": {
    "source": {"type": "generate", "config": {"count": "${vars.rows}"}},
    "sink": {"type": "postgres", "config": {"url": "${env:PG_URL}", "table": "people"}}
  }
}`)
	r := runFaucet(t, dir, []string{"PG_URL=" + url}, "run", "gen.json")
	mustSucceed(t, r)
	if !strings.Contains(r.stderr, "60,000 records in") {
		t.Errorf("summary:\n%s", r.stderr)
	}
	got := pgRows(t, url, "SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM people")
	if !equal(got, []string{`{"n":60000,"d":60000,"lo":1,"hi":60000}`}) {
		t.Errorf("postgres holds %v", got)
	}
	// Spot-check one row exactly against the generator.
	got = pgRows(t, url, "SELECT id, first_name, country, amount::text, created_at, active, attributes FROM people WHERE id = 4242")
	var want generate.Row = generate.RowOf(1, 4242)
	if len(got) != 1 || !strings.Contains(got[0], `"first_name":"`+want.FirstName+`"`) || !strings.Contains(got[0], `"amount":"`+want.Amount()+`"`) {
		t.Errorf("row 4242 = %v, want %+v", got, want)
	}
}

func TestRunMatrixFailureAndSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.jsonl"), "{\"a\": 1}\n{\"a\": 2}\n")
	writeFile(t, filepath.Join(dir, "matrix.yaml"), `version: 1
pipeline:
  source: {type: jsonl, config: {path: in.jsonl}}
  sink: {type: sqlite, config: {path: out.db, table: "${vars.table}"}}
execution: {on_error: continue}
matrix:
  - {id: good, vars: {table: t1}}
  - {id: missing-input, vars: {table: t2}, source: {config: {path: nope.jsonl}}}
  - {id: also-good, vars: {table: t3}}
`)
	r := runFaucet(t, dir, nil, "run", "matrix.yaml")
	if r.code == 0 {
		t.Fatalf("a run with a failed row exited 0:\n%s", r.stderr)
	}
	for _, want := range []string{
		"good ", "also-good", "missing-input", "nope.jsonl",
		"4 records in", "1 of 3 invocations did not complete",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stderr)
		}
	}
	if got := sqliteRows(t, filepath.Join(dir, "out.db"), "SELECT (SELECT count(*) FROM t1), (SELECT count(*) FROM t3)"); !equal(got, []string{"2|2"}) {
		t.Errorf("the good rows wrote %v", got)
	}

	r = runFaucet(t, dir, nil, "run", "matrix.yaml", "--set", "execution.on_error=stop", "--set", "pipeline.sink.config.path=stop.db")
	if r.code == 0 || !strings.Contains(r.stderr, "not run") {
		t.Errorf("on_error stop should leave the last row not run:\n%s", r.stderr)
	}
}

func TestRunBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, config string
		env          []string
		want         []string
	}{
		{"malformed yaml", "version: 1\npipeline:\n  source: [1, 2\n  sink: {}\n",
			nil, []string{"bad.yaml:4:3: invalid YAML"}},
		{"unknown connector", "version: 1\npipeline:\n  source: {type: sqlit, config: {}}\n  sink: {type: stdout}\n",
			nil, []string{`bad.yaml:3:12: pipeline.source.type: unknown source connector "sqlit"; did you mean "sqlite"?`, "known: csv, dlq, generate, jsonl, postgres, sqlite"}},
		{"schema violation", "version: 1\npipeline:\n  source: {type: sqlite, config: {path: x.db}}\n  sink: {type: postgres, config: {url: x, table: t, write_mode: upsert}}\n",
			nil, []string{`bad.yaml:3:26: pipeline.source.config: set one of "table", "query"`, `bad.yaml:4:26: pipeline.sink.config: missing required key "key"`}},
		{"missing input file", "version: 1\npipeline:\n  source: {type: sqlite, config: {path: nowhere.db, table: t}}\n  sink: {type: stdout}\n",
			nil, []string{"sqlite database nowhere.db", "no such file or directory"}},
		{"unreachable database", "version: 1\npipeline:\n  source: {type: postgres, config: {url: \"postgres://u:s3cret@127.0.0.1:1/db\", table: t}}\n  sink: {type: stdout}\nresilience: {retry: {max_attempts: 2, backoff: {initial: 10ms}}}\n",
			nil, []string{"connect to postgres", "connection refused"}},
		{"missing env", "version: 1\npipeline:\n  source: {type: postgres, config: {url: \"${env:NOPE}\", table: t}}\n  sink: {type: stdout}\n",
			nil, []string{"bad.yaml:3:37: pipeline.source.config.url: environment variable NOPE is not set"}},
	}
	for _, tc := range cases {
		writeFile(t, filepath.Join(dir, "bad.yaml"), tc.config)
		r := runFaucet(t, dir, tc.env, "run", "bad.yaml")
		if r.code == 0 {
			t.Errorf("%s: exited 0", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "s3cret") {
			t.Errorf("%s: a secret leaked:\n%s", tc.name, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%s: records reached the stdout sink of a failed run: %q", tc.name, r.stdout)
		}
	}
}

// TestShardBlockIsNotedByRun: faucet run splits only with --shards, so a
// config's shard block is said to be left to faucet serve and the pipeline
// runs whole.
func TestShardBlockIsNotedByRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), `version: 1
shard: {count: 4}
pipeline:
  source: {type: generate, config: {count: 25}}
  sink: {type: jsonl, config: {path: out.jsonl}}
`)
	for _, cmd := range []string{"validate", "run"} {
		r := runFaucet(t, dir, nil, cmd, "p.yaml")
		mustSucceed(t, r)
		if !strings.Contains(r.stderr, "shard: {count: 4} takes effect in faucet serve; faucet run splits a run only with --shards N") {
			t.Errorf("faucet %s does not note the ignored shard block:\n%s", cmd, r.stderr)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 25 {
		t.Errorf("the whole pipeline wrote %d records, want 25", n)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok.yaml"), `version: 1
pipeline:
  source: {type: generate, config: {count: 3}}
  sink: {type: sqlite, config: {path: never.db, table: t}}
matrix: [{id: a}, {id: b}]
`)
	r := runFaucet(t, dir, nil, "validate", "ok.yaml")
	mustSucceed(t, r)
	if !strings.Contains(r.stdout, "ok.yaml: valid, 2 invocation(s)") || !strings.Contains(r.stdout, "a: generate → sqlite") {
		t.Errorf("validate output:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.db")); err == nil {
		t.Error("validate touched the sink")
	}
	writeFile(t, filepath.Join(dir, "bad.json"), "{\n  \"version\": 1,\n  \"pipline\": {}\n}\n")
	r = runFaucet(t, dir, nil, "validate", "bad.json")
	if r.code == 0 || !strings.Contains(r.stderr, `bad.json:3:3: pipline: unknown key; did you mean "pipeline"?`) || !strings.Contains(r.stderr, "2 problem(s)") {
		t.Errorf("validate bad.json exited %d:\n%s", r.code, r.stderr)
	}
	cmd := command(t, dir, nil, "validate", "-")
	cmd.Stdin = strings.NewReader(`{"version": 1, "pipeline": {"source": {"type": "generate", "config": {"count": 1}}, "sink": {"type": "stdout"}}}`)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "standard input: valid") {
		t.Errorf("validate -: %v\n%s", err, out)
	}
}

func TestConnectorsCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runFaucet(t, dir, nil, "connectors", "list")
	mustSucceed(t, r)
	for _, name := range []string{"csv", "generate", "jsonl", "postgres", "sqlite", "stdout"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s`).MatchString(r.stdout) {
			t.Errorf("connectors list lacks %s:\n%s", name, r.stdout)
		}
	}
	r = runFaucet(t, dir, nil, "connectors", "spec", "postgres", "--output", "json")
	mustSucceed(t, r)
	var spec struct {
		Name         string   `json:"name"`
		Roles        []string `json:"roles"`
		WriteModes   []string `json:"write_modes"`
		SourceSchema struct {
			Properties map[string]struct {
				WriteOnly bool `json:"writeOnly"`
			} `json:"properties"`
		} `json:"source_schema"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &spec); err != nil {
		t.Fatalf("spec is not JSON: %v\n%s", err, r.stdout)
	}
	if spec.Name != "postgres" || len(spec.Roles) != 2 || !spec.SourceSchema.Properties["url"].WriteOnly || len(spec.WriteModes) != 3 {
		t.Errorf("spec = %+v", spec)
	}
	r = runFaucet(t, dir, nil, "connectors", "spec", "postgress")
	if r.code == 0 || !strings.Contains(r.stderr, `no connector "postgress"`) {
		t.Errorf("spec of an unknown connector: %d %s", r.code, r.stderr)
	}
}

// interruptRun starts faucet run on config in dir and sends it SIGINT the
// way a person's Ctrl-C does: once ready holds, or without ready once
// progress shows. It returns what the run printed and its exit status.
func interruptRun(t *testing.T, dir, config string, ready func() bool) (string, int) {
	t.Helper()
	cmd := command(t, dir, nil, "run", config)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := make(chan struct{})
	var out strings.Builder
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if !seen && strings.HasPrefix(sc.Text(), "progress:") {
				seen = true
				close(progress)
			}
		}
	}()
	if ready == nil {
		<-progress
	} else {
		for !ready() {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-read
	err = cmd.Wait()
	assertNoPlugins(t, dir)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("an interrupted run exited with %v:\n%s", err, out.String())
	}
	return out.String(), exit.ExitCode()
}

// TestRunCancelCommitsAcknowledgedBatches interrupts a long run the way a
// person does, with SIGINT, once progress shows, and checks the sink kept
// exactly what the summary reports as written, and the exit status is 130.
func TestRunCancelCommitsAcknowledgedBatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "long.yaml"), `version: 1
pipeline:
  source: {type: generate, config: {count: 500000000}}
  sink: {type: sqlite, config: {path: out.db, table: t}}
`)
	out, code := interruptRun(t, dir, "long.yaml", nil)
	if code != 130 {
		t.Errorf("an interrupted run exited %d, want 130:\n%s", code, out)
	}
	m := regexp.MustCompile(`(?m)^default\s+([0-9,]+)\s+\S+\s+cancelled$`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "interrupted") {
		t.Fatalf("no summary after the interrupt:\n%s", out)
	}
	written, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if written == 0 {
		t.Fatalf("nothing was written before the interrupt:\n%s", out)
	}
	got := sqliteRows(t, filepath.Join(dir, "out.db"), "SELECT count(*), count(DISTINCT id), max(id) FROM t")
	if want := fmt.Sprintf("%d|%d|%d", written, written, written); !equal(got, []string{want}) {
		t.Errorf("the sink holds %v, the summary says %d records were written", got, written)
	}
}

// TestInterruptKeepsAnOverwrittenFile interrupts a run with SIGINT while
// one row overwrites a file (its partial copy already on disk) and another
// appends to one: the overwritten file keeps its previous contents and the
// summary says so, the appended one gains exactly the acknowledged records.
func TestInterruptKeepsAnOverwrittenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const previous = "{\"previous\": true}\n"
	writeFile(t, filepath.Join(dir, "replaced.jsonl"), previous)
	writeFile(t, filepath.Join(dir, "grown.jsonl"), previous)
	writeFile(t, filepath.Join(dir, "long.yaml"), `version: 1
pipeline:
  source: {type: generate, config: {count: 500000000}}
  sink: {type: jsonl, config: {path: replaced.jsonl}}
execution: {max_concurrent: 2}
matrix:
  - id: overwrite
  - id: append
    sink: {config: {path: grown.jsonl, write_mode: append}}
`)
	partial := func() bool {
		names, _ := filepath.Glob(filepath.Join(dir, ".replaced.jsonl.faucet-*"))
		for _, n := range names {
			if fi, err := os.Stat(n); err == nil && fi.Size() > 0 {
				return true
			}
		}
		return false
	}
	grown := func() bool {
		fi, err := os.Stat(filepath.Join(dir, "grown.jsonl"))
		return err == nil && fi.Size() > int64(len(previous))
	}
	out, code := interruptRun(t, dir, "long.yaml", func() bool { return partial() && grown() })
	if code != 130 {
		t.Errorf("an interrupted run exited %d, want 130:\n%s", code, out)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "replaced.jsonl")); err != nil || string(got) != previous {
		t.Errorf("the interrupted overwrite left %d bytes (%v), want the previous file", len(got), err)
	}
	if partial() {
		t.Error("the partial copy was left behind")
	}
	if !regexp.MustCompile(`(?m)^overwrite\s+0\s+\S+\s+cancelled, previous output kept`).MatchString(out) {
		t.Errorf("the summary does not say the overwritten file was kept:\n%s", out)
	}
	m := regexp.MustCompile(`(?m)^append\s+([0-9,]+)\s+\S+\s+cancelled$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary of the appending row:\n%s", out)
	}
	written, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if lines := len(sortedLines(t, filepath.Join(dir, "grown.jsonl"))); written == 0 || lines != written+1 {
		t.Errorf("the appended file holds %d lines, want the previous one and the %d acknowledged records", lines, written)
	}
}

// TestShardedSourcesThroughPlugins splits every shardable file and database
// source through the plugin host, runs every shard as its own invocation (as
// cluster mode does), and checks the shards together hold exactly the
// records of one unsharded read.
func TestShardedSourcesThroughPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := testpg.Database(t)
	db := filepath.Join(dir, "src.db")
	writeFile(t, filepath.Join(dir, "seed.yaml"), fmt.Sprintf(`version: 1
pipeline:
  source: {type: generate, config: {count: 20000, seed: 5}}
  sink: {type: sqlite, config: {path: %q, table: people}}
matrix:
  - id: sqlite
  - id: postgres
    sink: {type: postgres, config: {url: %q, table: people, key: [id]}}
  - id: csv
    sink: {type: csv, config: {path: src.csv}}
  - id: jsonl
    sink: {type: jsonl, config: {path: src.jsonl}}
  - id: part1
    sink: {type: csv, config: {path: parts/1.csv}}
  - id: part2
    sink: {type: csv, config: {path: parts/2.csv}}
  - id: part3
    sink: {type: csv, config: {path: parts/3.csv}}
`, db, url))
	mustSucceed(t, runFaucet(t, dir, nil, "run", "seed.yaml"))

	var specs []sdk.Spec
	for _, c := range builtin.All() {
		specs = append(specs, c.Spec())
	}
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: specs})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// One large file is split by byte ranges into the shards asked for, a
	// glob of three files by file.
	sources := map[string]struct {
		typ             string
		config          map[string]any
		shards, records int
	}{
		"sqlite":   {"sqlite", map[string]any{"path": db, "table": "people"}, 5, 20000},
		"postgres": {"postgres", map[string]any{"url": url, "query": "SELECT * FROM people WHERE id % 3 <> 0", "key": "created_at"}, 5, 13334},
		"csv":      {"csv", map[string]any{"path": filepath.Join(dir, "src.csv")}, 5, 20000},
		"jsonl":    {"jsonl", map[string]any{"path": filepath.Join(dir, "src.jsonl")}, 5, 20000},
		"csv-glob": {"csv", map[string]any{"path": filepath.Join(dir, "parts", "*.csv")}, 3, 60000},
	}
	for name, s := range sources {
		raw, _ := json.Marshal(s.config)
		src := pipeline.ConnectorConfig{Type: s.typ, Config: raw}
		shards, err := h.Shards(context.Background(), src, 5)
		if err != nil || len(shards) != s.shards {
			t.Fatalf("%s: shards %v, %v", name, shards, err)
		}
		sink := func(file string) pipeline.ConnectorConfig {
			raw, _ := json.Marshal(map[string]any{"path": filepath.Join(dir, file), "write_mode": "append"})
			return pipeline.ConnectorConfig{Type: "jsonl", Config: raw}
		}
		invs := []pipeline.Invocation{{RowID: "whole", Source: src, Sink: sink(name + "-whole.jsonl")}}
		for i := range shards {
			invs = append(invs, pipeline.Invocation{RowID: fmt.Sprint("shard", i), Source: src, SourceShard: &shards[i], Sink: sink(name + "-shards.jsonl")})
		}
		plan := &pipeline.Plan{Invocations: invs, Execution: pipeline.Execution{MaxConcurrent: 2, OnError: pipeline.OnErrorStop}}
		if _, err := pipeline.Execute(context.Background(), plan, pipeline.ExecuteOptions{Connectors: h}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		whole, sharded := sortedLines(t, filepath.Join(dir, name+"-whole.jsonl")), sortedLines(t, filepath.Join(dir, name+"-shards.jsonl"))
		if len(whole) != s.records || !equal(whole, sharded) {
			t.Errorf("%s: %d shards hold %d records, the whole source %d, or they differ", name, len(shards), len(sharded), len(whole))
		}
	}
}

func sortedLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	slices.Sort(lines)
	return lines
}
