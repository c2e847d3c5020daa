package host_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
)

// TestPluginsGetACleanEnvironment starts a plugin that records its
// environment: it holds the minimum a process needs and exactly what
// Options.Env passes on, and nothing else of faucet's own environment.
func TestPluginsGetACleanEnvironment(t *testing.T) {
	t.Setenv("FAUCET_TEST_PRIVATE", "must-not-leak")
	t.Setenv("FAUCET_TEST_PASSED", "copied")
	env := pluginEnv(t, []string{"FAUCET_TEST_PASSED", "FAUCET_TEST_EXPLICIT=given", "FAUCET_TEST_UNSET"})
	for k, want := range map[string]string{"FAUCET_TEST_PASSED": "copied", "FAUCET_TEST_EXPLICIT": "given", "PATH": os.Getenv("PATH")} {
		if env[k] != want {
			t.Errorf("plugin's %s = %q, want %q", k, env[k], want)
		}
	}
	for _, k := range []string{"FAUCET_TEST_PRIVATE", "FAUCET_TEST_UNSET"} {
		if v, ok := env[k]; ok {
			t.Errorf("plugin's environment has %s=%q; faucet's own environment must not leak", k, v)
		}
	}
}

// TestNicePluginsRunAtLowerPriority runs a pipeline on a host with Nice set
// and checks every thread of every plugin process it started has that nice
// value, while the test process keeps its own.
func TestNicePluginsRunAtLowerPriority(t *testing.T) {
	h := newHostWith(t, host.Options{Nice: 7})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	p := plan(pipeline.Invocation{RowID: "r", Source: cfg("generate", map[string]any{"count": 10}), Sink: cfg("jsonl", map[string]any{"path": out})})
	if _, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h}); err != nil {
		t.Fatal(err)
	}
	pids := children(t, faucetBin)
	if len(pids) == 0 {
		t.Fatal("no warm plugin process after the run")
	}
	for _, pid := range pids {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("threads of plugin %d: %v", pid, err)
		}
		for _, stat := range tasks {
			if n := niceOf(t, stat); n != 7 {
				t.Errorf("plugin thread %s has nice %d, want 7", stat, n)
			}
		}
	}
	if n := niceOf(t, "/proc/self/stat"); n != 0 {
		t.Errorf("faucet's own nice is %d, want it untouched", n)
	}
}

// niceOf reads the nice value from a /proc stat file.
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	// nice is field 19.
	fields := statFields(stat)
	if len(fields) < 17 {
		t.Fatalf("%s: no nice field in %v", stat, fields)
	}
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatalf("%s: %v", stat, err)
	}
	return n
}

// TestPluginsRunOnOneProcUnlessConfigured checks that a plugin starts with
// GOMAXPROCS=1 and that Options.Env overrides it.
func TestPluginsRunOnOneProcUnlessConfigured(t *testing.T) {
	if got := pluginEnv(t, nil)["GOMAXPROCS"]; got != "1" {
		t.Errorf("plugin's GOMAXPROCS = %q, want 1", got)
	}
	if got := pluginEnv(t, []string{"GOMAXPROCS=2"})["GOMAXPROCS"]; got != "2" {
		t.Errorf("plugin's GOMAXPROCS with Env GOMAXPROCS=2 = %q, want 2", got)
	}
}

// pluginEnv starts a plugin through a script that records its environment,
// with the given Options.Env, and returns that environment.
func pluginEnv(t *testing.T, passed []string) map[string]string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dump := filepath.Join(t.TempDir(), "env")
	script := fmt.Sprintf("#!/bin/sh\nenv > %s\n%s=1 exec %s\n", dump, leakyEnv, self)
	if err := os.WriteFile(filepath.Join(dir, "leaky"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHostWith(t, host.Options{PluginDirs: []string{dir}, Env: passed})
	if _, ok := h.Lookup("leaky"); !ok {
		t.Fatal("the plugin was not discovered")
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the plugin did not record its environment: %v", err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestPluginLifecycleLinesNameTheExecutable: go-plugin's own lines about a
// process started through nice(1) name the connector's executable, not
// nice; they are debug detail of the host's log, and none of them reaches
// the log of the session that used the process.
func TestPluginLifecycleLinesNameTheExecutable(t *testing.T) {
	logger, hostLog := testLog(t)
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: logger, Nice: 7})
	if err != nil {
		t.Fatal(err)
	}
	sessionLog := &lockedBuffer{}
	ctx := pipeline.WithSessionLog(context.Background(), pipeline.SessionLog{Logger: slog.New(slog.NewTextHandler(sessionLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	p := plan(pipeline.Invocation{RowID: "r", Source: cfg("generate", map[string]any{"count": 10}), Sink: cfg("jsonl", map[string]any{"path": out})})
	if _, err := pipeline.Execute(ctx, p, pipeline.ExecuteOptions{Connectors: h}); err != nil {
		t.Fatal(err)
	}
	h.Close()
	assertNoChildren(t)
	nice, err := exec.LookPath("nice")
	if err != nil {
		t.Fatalf("nice(1) is needed here: %v", err)
	}
	logged := hostLog.String()
	for _, want := range []string{`level=DEBUG msg="starting plugin" connector=generate path=` + faucetBin, `level=DEBUG msg="plugin process exited" connector=generate plugin=` + faucetBin} {
		if !strings.Contains(logged, want) {
			t.Errorf("host log lacks %q:\n%s", want, logged)
		}
	}
	if strings.Contains(logged, nice) {
		t.Errorf("host log names %s instead of the connector's executable:\n%s", nice, logged)
	}
	for _, line := range []string{"starting plugin", "waiting for RPC address", "plugin process exited"} {
		if strings.Contains(sessionLog.String(), line) {
			t.Errorf("the session's log got go-plugin's %q:\n%s", line, sessionLog.String())
		}
	}
}
