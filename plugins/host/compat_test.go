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

// Revisions a third-party plugin may have been built from: the last commit
// whose SDK spoke only connector protocol 1.0, and the last ones speaking
// 1.1, 1.2 and 1.3 at most. A plugin built from one stands for every
// plugin built before the next version, which must keep working.
const (
	protocol10Revision = "cc1348f43fd380ee15ec9aeaff508420ba432bf9"
	protocol11Revision = "14b87e2e125fd0f676e22f696ae197aece416660"
	protocol12Revision = "fff8c5c5eaa82e34707111cab227af615ad14241"
	protocol13Revision = "532fd7bf106edf88ec7fcfef63c9d2dc48ea0733"
)

var (
	oldLinesMu   sync.Mutex
	oldLinesBins = map[string]string{}
)

// buildLinesAt builds the example lines plugin as it stood at revision,
// from that revision's plugins tree (its SDK, protocol and example, taken
// from the repository's history), into a plugin directory of its own, and
// returns the directory.
// Each revision is built once per test binary.
func buildLinesAt(t *testing.T, revision string) string {
	t.Helper()
	oldLinesMu.Lock()
	defer oldLinesMu.Unlock()
	if bin, ok := oldLinesBins[revision]; ok {
		return filepath.Dir(bin)
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("find the repository (this test builds a plugin from its history): %v", err)
	}
	// Inside the directory TestMain removes at the end.
	src := filepath.Join(filepath.Dir(faucetBin), "lines-"+revision[:12])
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(src, "plugins-dir", "faucet-lines")
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" go.mod go.sum plugins | tar -x -C "$3"`,
		"sh", strings.TrimSpace(string(root)), revision, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extract revision %s (a shallow clone lacks it; fetch the history): %v\n%s", revision, err, out)
	}
	build := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	build.Dir = filepath.Join(src, "plugins", "examples", "lines")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the lines plugin of revision %s: %v\n%s", revision, err, out)
	}
	oldLinesBins[revision] = bin
	return filepath.Dir(bin)
}

// TestProtocol10PluginKeepsWorking runs a plugin built against protocol 1.0
// next to the built-ins, which speak 1.1 and later: faucet negotiates 1.0
// with it, a 1.1 sink reads it through plain messages, and it reads a 1.1
// source with the calls it knows; the records arrive whole either way,
// while two 1.1 plugins exchange theirs through shared memory.
func TestProtocol10PluginKeepsWorking(t *testing.T) {
	hostLog, logged := testLog(t)
	linesDir := buildLinesAt(t, protocol10Revision)
	linesV10Bin := filepath.Join(linesDir, "faucet-lines")
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog, PluginDirs: []string{linesDir, installSelf(t, "held", heldEnv)}})
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
