package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Binaries built once for the package: the faucet binary (which serves the
// built-in connectors) and the third-party example plugin.
var (
	faucetBin string
	linesBin  string
)

func TestMain(m *testing.M) {
	if bin := os.Getenv(helperEnv); bin != "" {
		runHelper(bin)
		return
	}
	if os.Getenv(leakyEnv) != "" {
		sdk.Serve(leaky{})
	}
	if os.Getenv(heldEnv) != "" {
		sdk.Serve(held{})
	}
	dir, err := os.MkdirTemp("", "faucet-host-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		faucetBin = filepath.Join(dir, "faucet")
		linesBin = filepath.Join(dir, "faucet-lines")
		for _, b := range []struct{ dir, out, pkg string }{
			{"../..", faucetBin, "./cmd/faucet"},
			// The example is its own module on top of this one: -mod=mod lets
			// it follow this module's dependency versions as they move.
			{"../examples/lines", linesBin, "."},
		} {
			cmd := exec.Command("go", "build", "-mod=mod", "-o", b.out, b.pkg)
			cmd.Dir = b.dir
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "build %s: %v\n", b.pkg, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func builtinSpecs() []sdk.Spec {
	var specs []sdk.Spec
	for _, c := range builtin.All() {
		specs = append(specs, c.Spec())
	}
	return specs
}

// newHost starts a host over the test faucet binary and the given plugin
// directories, closed (and checked for orphans) when the test ends.
func newHost(t *testing.T, dirs ...string) *host.Host {
	t.Helper()
	return newHostWith(t, host.Options{PluginDirs: dirs})
}

// newHostWith is newHost with more options; it fills in the test faucet
// binary, the built-in specs and the test logger.
func newHostWith(t *testing.T, opts host.Options) *host.Host {
	t.Helper()
	opts.Executable = faucetBin
	opts.Builtins = builtinSpecs()
	opts.Logger = testLogger(t)
	h, err := host.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(func() {
		h.Close()
		assertNoChildren(t)
	})
	return h
}

// children lists the live child processes of the test whose command line
// contains substr.
func children(t *testing.T, substr string) []int {
	t.Helper()
	var pids []int
	for _, pid := range liveChildren(os.Getpid()) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), substr) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func assertNoChildren(t *testing.T) {
	t.Helper()
	for _, bin := range []string{faucetBin, linesBin} {
		if pids := children(t, bin); len(pids) > 0 {
			t.Errorf("plugin processes left behind: %v (%s)", pids, bin)
		}
	}
}

func cfg(typ string, v any) pipeline.ConnectorConfig {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return pipeline.ConnectorConfig{Type: typ, Config: data}
}

func plan(invs ...pipeline.Invocation) *pipeline.Plan {
	return &pipeline.Plan{Invocations: invs, Execution: pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorContinue}}
}

// readJSONL returns a JSON Lines file's records, decoded.
func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open output: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %d: %v", path, len(out)+1, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func countLines(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read output: %v", err)
	}
	return int64(strings.Count(string(data), "\n"))
}
