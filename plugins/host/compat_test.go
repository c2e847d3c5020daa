package host_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/internal/protocol"
)

// protocol10Revision is the last commit whose SDK speaks only connector
// protocol 1.0. A plugin built from it stands for every third-party plugin
// built before protocol 1.1, which must keep working.
const protocol10Revision = "cc1348f43fd380ee15ec9aeaff508420ba432bf9"

var (
	linesV10Once sync.Once
	linesV10Bin  string
	linesV10Err  error
)

// buildLinesV10 builds the example lines plugin as it stood at
// protocol10Revision, from that revision's SDK and protocol (taken from
// the repository's history), into a plugin directory of its own.
func buildLinesV10(t *testing.T) string {
	t.Helper()
	linesV10Once.Do(func() {
		root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			linesV10Err = fmt.Errorf("find the repository (this test builds a plugin from its history): %w", err)
			return
		}
		// Inside the directory TestMain removes at the end.
		src := filepath.Join(filepath.Dir(faucetBin), "lines-v10")
		if err := os.MkdirAll(src, 0o755); err != nil {
			linesV10Err = err
			return
		}
		dir := filepath.Join(src, "plugins-dir")
		linesV10Bin = filepath.Join(dir, "faucet-lines")
		archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" go.mod go.sum plugins/sdk plugins/internal plugins/proto plugins/examples/lines | tar -x -C "$3"`,
			"sh", strings.TrimSpace(string(root)), protocol10Revision, src)
		if out, err := archive.CombinedOutput(); err != nil {
			linesV10Err = fmt.Errorf("extract revision %s (a shallow clone lacks it; fetch the history): %v\n%s", protocol10Revision, err, out)
			return
		}
		build := exec.Command("go", "build", "-mod=mod", "-o", linesV10Bin, ".")
		build.Dir = filepath.Join(src, "plugins", "examples", "lines")
		if out, err := build.CombinedOutput(); err != nil {
			linesV10Err = fmt.Errorf("build the protocol 1.0 lines plugin: %v\n%s", err, out)
		}
	})
	if linesV10Err != nil {
		t.Fatal(linesV10Err)
	}
	return filepath.Dir(linesV10Bin)
}

// TestProtocol10PluginKeepsWorking runs a plugin built against protocol 1.0
// next to the built-ins, which speak 1.1: faucet negotiates 1.0 with it,
// a 1.1 sink reads it through plain messages, and it reads a 1.1 source
// with the calls it knows; the records arrive whole either way, while two
// 1.1 plugins exchange theirs through shared memory.
func TestProtocol10PluginKeepsWorking(t *testing.T) {
	hostLog, logged := testLog(t)
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog, PluginDirs: []string{buildLinesV10(t), installSelf(t, "held", heldEnv)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		for _, pid := range children(t, linesV10Bin) {
			t.Errorf("protocol 1.0 plugin process %d left behind", pid)
		}
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	text := []string{"plain", `with "quotes" and \ backslash`, "Zoë ✓", "", "last"}
	if err := os.WriteFile(in, []byte(strings.Join(text, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// lines (1.0) → jsonl (1.1)
	out := filepath.Join(dir, "out.jsonl")
	if _, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{RowID: "default",
		Source: cfg("lines", map[string]any{"path": in}),
		Sink:   cfg("jsonl", map[string]any{"path": out}),
	}), pipeline.ExecuteOptions{Connectors: h, Logger: hostLog}); err != nil {
		t.Fatalf("lines → jsonl: %v", err)
	}
	var want []map[string]any
	for i, line := range text {
		want = append(want, map[string]any{"n": float64(i + 1), "line": line})
	}
	if got := readJSONL(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("lines → jsonl wrote %v, want %v", got, want)
	}

	// csv (1.1) → lines (1.0)
	csvIn := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(csvIn, []byte("line,other\n\"a, b\",1\nZoë ✓,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	linesOut := filepath.Join(dir, "out.txt")
	if _, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{RowID: "default",
		Source: cfg("csv", map[string]any{"path": csvIn}),
		Sink:   cfg("lines", map[string]any{"path": linesOut}),
	}), pipeline.ExecuteOptions{Connectors: h, Logger: hostLog}); err != nil {
		t.Fatalf("csv → lines: %v", err)
	}
	if got, err := os.ReadFile(linesOut); err != nil || string(got) != "a, b\nZoë ✓\n" {
		t.Errorf("csv → lines wrote %q (%v)", got, err)
	}

	// Between two 1.1 plugins the records go through shared memory: the
	// held source (this test binary, built against today's SDK) maps the
	// jsonl sink's region for its first batch, and the test sees the
	// mapping while the source holds.
	release := filepath.Join(dir, "release")
	heldOut := filepath.Join(dir, "held.jsonl")
	done := make(chan error, 1)
	go func() {
		_, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{RowID: "default",
			Source: cfg("held", heldConfig{Rows: 4000, HoldAfter: 2000, Release: release}),
			Sink:   cfg("jsonl", map[string]any{"path": heldOut}),
		}), pipeline.ExecuteOptions{Connectors: h, Logger: hostLog})
		done <- err
	}()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mapped := false
	for start := time.Now(); !mapped && time.Since(start) < 30*time.Second; time.Sleep(10 * time.Millisecond) {
		for _, pid := range children(t, self) {
			maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
			mapped = mapped || strings.Contains(string(maps), "memfd:faucet-batches")
		}
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("held → jsonl: %v", err)
	}
	if !mapped {
		t.Error("the 1.1 source never mapped the 1.1 sink's shared region")
	}
	if n := countLines(t, heldOut); n != 4000 {
		t.Errorf("held → jsonl wrote %d records, want 4000", n)
	}
	if !eventuallyLogged(logged, "reading the source through messages", "the source speaks connector protocol version 1") {
		t.Error("the 1.1 sink did not read the 1.0 source through plain messages")
	}
	if !containsLine(logged.String(), "plugin started", "connector=faucet-lines", "path="+linesV10Bin, "protocol=1") {
		t.Error("faucet did not negotiate protocol 1 (1.0) with the 1.0 plugin")
	}
	if !containsLine(logged.String(), "plugin started", "connector=csv", fmt.Sprintf("protocol=%d", protocol.Latest)) {
		t.Errorf("faucet did not negotiate protocol %d, the latest, with a built-in", protocol.Latest)
	}
}

// eventuallyLogged waits for a line holding every part to reach the log: a
// plugin's lines arrive through its standard error, after its session may
// have ended.
func eventuallyLogged(logged *lockedBuffer, parts ...string) bool {
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(10 * time.Millisecond) {
		if containsLine(logged.String(), parts...) {
			return true
		}
	}
	return false
}

// containsLine reports whether some line of log holds every part.
func containsLine(log string, parts ...string) bool {
	for line := range strings.Lines(log) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
