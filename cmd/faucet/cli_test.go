package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpNeverShowsTheToken: with the token exported, the help of every
// command taking --token names the variable and never prints its value.
func TestHelpNeverShowsTheToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const token = "s3cret-token-from-the-environment"
	env := []string{"FAUCET_TOKEN=" + token, "FAUCET_AUTH_TOKEN=" + token}
	for _, args := range [][]string{
		{"runs", "list", "--help"}, {"runs", "--help"}, {"runs", "submit", "--help"}, {"audit", "--help"},
		{"whoami", "--help"}, {"connectors", "spec", "--help"}, {"serve", "--help"},
	} {
		r := runFaucet(t, dir, env, args...)
		mustSucceed(t, r)
		if strings.Contains(r.stdout+r.stderr, token) {
			t.Errorf("faucet %s prints the token:\n%s", strings.Join(args, " "), r.stdout)
		}
		if args[0] != "serve" && !strings.Contains(r.stdout, "(from FAUCET_TOKEN when not given)") {
			t.Errorf("faucet %s does not say where the token comes from:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
}

// TestVersion: --version and the version command print the same line, with
// the revision the binary's build information records, or "unknown".
func TestVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flag, cmd := runFaucet(t, dir, nil, "--version"), runFaucet(t, dir, nil, "version")
	mustSucceed(t, flag)
	mustSucceed(t, cmd)
	if flag.stdout != cmd.stdout {
		t.Errorf("--version printed %q, version %q", flag.stdout, cmd.stdout)
	}
	info, err := exec.Command("go", "version", "-m", faucetBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	revision := "unknown"
	if m := regexp.MustCompile(`(?m)^\s+build\s+vcs\.revision=(\S+)$`).FindSubmatch(info); m != nil {
		revision = string(m[1])
	}
	if !regexp.MustCompile(`^faucet \S+ \(revision ` + regexp.QuoteMeta(revision) + `(\+modified)?, go1\.\S+, \w+/\w+\)\n$`).MatchString(flag.stdout) {
		t.Errorf("version line %q, want the revision %s", flag.stdout, revision)
	}
}

// TestExitStatuses: 2 for what faucet refuses before any work, 1 for work
// that failed (130 for Ctrl-C is TestRunCancelCommitsAcknowledgedBatches').
func TestExitStatuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok.yaml"), "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}}\n  sink: {type: stdout}\n")
	writeFile(t, filepath.Join(dir, "bad.yaml"), "version: 1\npipeline:\n  source: {type: generate, config: {count: -1}}\n  sink: {type: stdout}\n")
	for _, tc := range []struct {
		args []string
		env  []string
		code int
		say  string
	}{
		{[]string{"bogus"}, nil, 2, `unknown command "bogus"`},
		{[]string{"run"}, nil, 2, "accepts 1 arg(s)"},
		{[]string{"run", "ok.yaml", "--no-such-flag"}, nil, 2, "unknown flag: --no-such-flag"},
		{[]string{"validate", "ok.yaml", "--output", "xml"}, nil, 2, `want text or json, not "xml"`},
		{[]string{"run", "ok.yaml", "--log-level", "loud"}, nil, 2, `--log-level "loud"`},
		{[]string{"run", "ok.yaml", "--output", "json"}, nil, 2, "the stdout sink"},
		{[]string{"runs", "list", "--server", "ftp://x"}, nil, 2, "want host:port or an http(s):// URL"},
		// --plugin-nice 99 stops a serve that got past the variables.
		{[]string{"serve", "--listen", "127.0.0.1:0", "--plugin-nice", "99"}, []string{"FAUCET_NO_AUTH=yes"}, 2, `FAUCET_NO_AUTH="yes" is not a boolean`},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--plugin-nice", "99"}, []string{"FAUCET_MAX_QUEUED_RUNS=lots"}, 2, `FAUCET_MAX_QUEUED_RUNS="lots" is not a number`},
		{[]string{"validate", "bad.yaml"}, nil, 1, "pipeline.source.config.count: minimum"},
		{[]string{"run", "missing.yaml"}, nil, 1, "no such file or directory"},
		{[]string{"runs", "list", "--server", "127.0.0.1:1"}, nil, 1, "no faucet serve is listening at http://127.0.0.1:1 (connection refused)"},
	} {
		r := runFaucet(t, dir, tc.env, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.say) {
			t.Errorf("faucet %s: exit %d, want %d saying %q:\n%s", strings.Join(tc.args, " "), r.code, tc.code, tc.say, r.stderr)
		}
	}
}

// TestJSONOutput: validate, run, connectors list and spec print JSON a
// script can read, on standard output.
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), `version: 1
pipeline:
  source: {type: generate, config: {count: 7}}
  sink: {type: jsonl, config: {path: out.jsonl}}
matrix: [{id: a}, {id: b, sink: {config: {path: b.jsonl, write_mode: append}}}]
`)
	var v validation
	r := runFaucet(t, dir, nil, "validate", "p.yaml", "--json")
	mustSucceed(t, r)
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !v.Valid || len(v.Invocations) != 2 ||
		v.Invocations[0] != (validInvocation{RowID: "a", Source: "generate", Sink: "jsonl", SinkWriteMode: "overwrite"}) || v.Invocations[1].SinkWriteMode != "append" {
		t.Errorf("validate --json: %+v (%v)\n%s", v, err, r.stdout)
	}
	r = runFaucet(t, dir, nil, "validate", "p.yaml", "--output", "json", "--set", "pipeline.source.config.count=-3", "--set", "oops")
	v = validation{}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 1 || v.Valid || len(v.Problems) != 2 {
		t.Fatalf("validate --output json of a bad override: exit %d, %+v (%v)\n%s", r.code, v, err, r.stdout)
	}
	if p := v.Problems[1]; p.Set != "pipeline.source.config.count=-3" || p.Path != "pipeline.source.config.count" || p.File != "" || p.Line != 0 {
		t.Errorf("the bad value is not blamed on its --set: %+v", p)
	}

	var sum runSummary
	r = runFaucet(t, dir, nil, "run", "p.yaml", "-o", "json")
	mustSucceed(t, r)
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.RecordsWritten != 14 || len(sum.Invocations) != 2 ||
		sum.Invocations[0].Result != "ok" || sum.Invocations[1].RecordsWritten != 7 || sum.Incomplete != 0 || sum.Interrupted {
		t.Errorf("run --output json: %+v (%v)\n%s", sum, err, r.stdout)
	}

	var list []connectorSpec
	r = runFaucet(t, dir, nil, "connectors", "list", "--json")
	mustSucceed(t, r)
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 7 || list[0].Name != "csv" || !list[0].Builtin || list[0].SourceSchema != nil {
		t.Errorf("connectors list --json: %+v (%v)", list, err)
	}
	r = runFaucet(t, dir, nil, "connectors", "spec", "jsonl")
	mustSucceed(t, r)
	for _, want := range []string{"jsonl 1.0.0", "roles: source, sink", "sink config:", "write_mode", `(default "overwrite")`, "mode  "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("connectors spec jsonl lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestFileSinkModes: a file a sink creates gets 0666 less the umask, or the
// mode option's bits, and an overwritten file keeps its own.
func TestFileSinkModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), `version: 1
pipeline:
  source: {type: generate, config: {count: 3}}
  sink: {type: jsonl, config: {path: default.jsonl}}
matrix:
  - id: default
  - id: csv
    sink: {type: csv, config: {path: default.csv}}
  - id: private
    sink: {config: {path: private.jsonl, mode: "0600"}}
  - id: appended
    sink: {config: {path: appended.jsonl, write_mode: append, mode: "640"}}
  - id: kept
    sink: {config: {path: kept.jsonl}}
`)
	writeFile(t, filepath.Join(dir, "kept.jsonl"), "{}\n")
	if err := os.Chmod(filepath.Join(dir, "kept.jsonl"), 0o604); err != nil {
		t.Fatal(err)
	}
	cmd := command(t, dir, nil)
	cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", `umask 027 && exec "$0" run p.yaml`, faucetBin}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("faucet run under umask 027: %v\n%s", err, out)
	}
	assertNoPlugins(t, dir)
	for file, want := range map[string]os.FileMode{
		"default.jsonl": 0o640, "default.csv": 0o640, "private.jsonl": 0o600, "appended.jsonl": 0o640, "kept.jsonl": 0o604,
	} {
		fi, err := os.Stat(filepath.Join(dir, file))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", file, fi.Mode().Perm(), err, want)
		}
	}
	writeFile(t, filepath.Join(dir, "bad.yaml"), "version: 1\npipeline:\n  source: {type: generate, config: {count: 3}}\n  sink: {type: jsonl, config: {path: x.jsonl, mode: \"999\"}}\n")
	r := runFaucet(t, dir, nil, "validate", "bad.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, `pipeline.sink.config.mode: "999" is not a file mode (three octal digits), such as "0600" or "0644"`) {
		t.Errorf("a bad mode: exit %d\n%s", r.code, r.stderr)
	}
}

// TestLogLevels: -v shows the invocations and the connectors' lines but not
// go-plugin's process lifecycle, which --log-level debug adds.
func TestLogLevels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), "version: 1\npipeline:\n  source: {type: generate, config: {count: 3}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n")
	r := runFaucet(t, dir, nil, "run", "p.yaml", "-v")
	mustSucceed(t, r)
	if !strings.Contains(r.stderr, "invocation finished") || strings.Contains(r.stderr, "starting plugin") || strings.Contains(r.stderr, "level=DEBUG") {
		t.Errorf("run -v:\n%s", r.stderr)
	}
	r = runFaucet(t, dir, nil, "run", "p.yaml", "--log-level", "debug")
	mustSucceed(t, r)
	if !strings.Contains(r.stderr, `msg="starting plugin" connector=generate path=`+faucetBin) {
		t.Errorf("run --log-level debug lacks the plugin lifecycle:\n%s", r.stderr)
	}
}

// TestCompletion: the shell completion of connectors spec offers the
// connector names.
func TestCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runFaucet(t, dir, nil, "__complete", "connectors", "spec", "s")
	mustSucceed(t, r)
	if !regexp.MustCompile(`(?m)^sqlite\t`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^stdout\t`).MatchString(r.stdout) || strings.Contains(r.stdout, "postgres") {
		t.Errorf("completion of connectors spec s:\n%s", r.stdout)
	}
	r = runFaucet(t, dir, nil, "__complete", "init", "--sink", "p")
	mustSucceed(t, r)
	if !regexp.MustCompile(`(?m)^postgres$`).MatchString(r.stdout) {
		t.Errorf("completion of init --sink p:\n%s", r.stdout)
	}
	r = runFaucet(t, dir, nil, "completion", "bash")
	mustSucceed(t, r)
	if !strings.Contains(r.stdout, "__start_faucet") {
		t.Errorf("completion bash does not print a bash completion script")
	}
}

// TestInit: faucet init writes a starter config from flags that runs as
// written for generate → jsonl, lists what to fill in for others, asks when
// told to, and never replaces a file unasked.
func TestInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runFaucet(t, dir, nil, "init")
	mustSucceed(t, r)
	if !strings.Contains(r.stdout, "wrote pipeline.yaml (generate → jsonl)") || !strings.Contains(r.stdout, "run it with: faucet run pipeline.yaml") {
		t.Errorf("init:\n%s", r.stdout)
	}
	r = runFaucet(t, dir, nil, "run", "pipeline.yaml")
	mustSucceed(t, r)
	if !strings.Contains(r.stderr, "1,000 records in") {
		t.Errorf("the starter config did not run as written:\n%s", r.stderr)
	}
	if r = runFaucet(t, dir, nil, "init"); r.code != 1 || !strings.Contains(r.stderr, "pipeline.yaml exists; pass --force") {
		t.Errorf("init over an existing file: exit %d\n%s", r.code, r.stderr)
	}
	r = runFaucet(t, dir, nil, "init", "pg.yaml", "--source", "postgres", "--sink", "sqlite", "--name", "copy")
	mustSucceed(t, r)
	for _, want := range []string{"pg.yaml:10:7: pipeline.source.config.url: environment variable POSTGRES_URL is not set", "pipeline.sink.config.table: got null"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("init of postgres → sqlite does not list %q:\n%s", want, r.stdout)
		}
	}
	if r = runFaucet(t, dir, nil, "init", "x.yaml", "--sink", "nope"); r.code != 2 || !strings.Contains(r.stderr, `--sink "nope": not a sink connector`) {
		t.Errorf("init --sink nope: exit %d\n%s", r.code, r.stderr)
	}

	cmd := command(t, dir, nil, "init", "asked.yaml", "--interactive")
	cmd.Stdin = strings.NewReader("orders\ncsv\nsqlite\nin.csv\nout.db\norders\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init --interactive: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(dir, "in.csv"), "id,name\n1,ada\n2,grace\n")
	mustSucceed(t, runFaucet(t, dir, nil, "run", "asked.yaml"))
	if got := sqliteRows(t, filepath.Join(dir, "out.db"), "SELECT id, name FROM orders ORDER BY id"); !equal(got, []string{"1|ada", "2|grace"}) {
		t.Errorf("the config init asked for moved %v", got)
	}
}
