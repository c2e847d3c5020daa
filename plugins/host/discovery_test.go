package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
)

// install copies a plugin binary into dir under name.
func install(t *testing.T, src, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestThirdPartyPlugin(t *testing.T) {
	plugins := t.TempDir()
	// The file name says nothing: identity comes from the plugin's Spec.
	install(t, linesBin, plugins, "some-file-name")
	logger, logged := testLog(t)
	h, err := host.New(context.Background(), host.Options{
		Executable: faucetBin, Builtins: builtinSpecs(), Logger: logger,
		PluginDirs: []string{filepath.Join(t.TempDir(), "missing-dir"), plugins},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		assertNoChildren(t)
	})

	c, ok := h.Lookup("lines")
	if !ok || c.Builtin || !c.Source || !c.Sink || c.Version != "0.1.0" {
		t.Fatalf("lines connector = %+v, %v", c, ok)
	}
	if names := h.ConnectorNames(pipeline.RoleSink); !reflect.DeepEqual(names, []string{"csv", "jsonl", "lines", "postgres", "sqlite", "stdout"}) {
		t.Errorf("sink names = %v", names)
	}
	if _, ok := h.ConnectorSchema(pipeline.RoleSource, "lines"); !ok {
		t.Error("no source schema for lines")
	}

	dir := t.TempDir()
	text := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(text, []byte("first line\n\"quoted\" and ünïcode\nlast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := filepath.Join(dir, "names.txt")
	p := plan(
		pipeline.Invocation{RowID: "read", Source: cfg("lines", map[string]any{"path": text}), Sink: cfg("jsonl", map[string]any{"path": filepath.Join(dir, "lines.jsonl")})},
		pipeline.Invocation{RowID: "write", Source: cfg("generate", map[string]any{"count": 25}), Sink: cfg("lines", map[string]any{"path": names, "field": "first_name"})},
	)
	results, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	got := readJSONL(t, filepath.Join(dir, "lines.jsonl"))
	want := []map[string]any{{"n": 1.0, "line": "first line"}, {"n": 2.0, "line": `"quoted" and ünïcode`}, {"n": 3.0, "line": "last"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines → jsonl = %v, want %v", got, want)
	}
	// Printed lines are relayed asynchronously: allow them a moment.
	logHas := func() bool {
		var logged1, printed bool
		for line := range strings.Lines(logged.String()) {
			// go-plugin passes a plugin's attributes on in no fixed order.
			logged1 = logged1 || strings.Contains(line, `msg="writing lines" connector=lines `) && strings.Contains(line, " path="+names)
			printed = printed || strings.Contains(line, `msg="opened `+names+`" connector=lines stream=stderr`)
		}
		return logged1 && printed
	}
	if err := testwait.Wait(10*time.Second, func() error {
		if !logHas() {
			return fmt.Errorf("the plugin's log line did not reach faucet's log tagged with its connector:\n%s", logged.String())
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	if results[1].RecordsWritten != 25 || countLines(t, names) != 25 {
		t.Errorf("generate → lines wrote %d records, %d lines; want 25", results[1].RecordsWritten, countLines(t, names))
	}
}

// TestDuplicatePluginNames: a connector found twice is taken from the
// first plugin directory, as a command from the first PATH entry, and the
// warning names both files.
func TestDuplicatePluginNames(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	a := install(t, linesBin, first, "faucet-lines")
	b := install(t, linesBin, second, "faucet-lines")
	c := install(t, linesBin, second, "faucet-lines-copy")
	logger, logged := testLog(t)
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), PluginDirs: []string{first, second}, Logger: logger})
	if err != nil {
		t.Fatalf("a connector in two plugin directories broke discovery: %v", err)
	}
	defer func() {
		h.Close()
		assertNoChildren(t)
	}()
	if got, ok := h.Lookup("lines"); !ok || got.Path != a {
		t.Errorf("lines is served by %q, want the first directory's %s", got.Path, a)
	}
	for _, hidden := range []string{b, c} {
		if !strings.Contains(logged.String(), `level=WARN msg="connector found twice; the first one found is used" connector=lines using=`+a+" ignoring="+hidden) {
			t.Errorf("no warning naming %s and the hidden %s:\n%s", a, hidden, logged.String())
		}
	}
}

// TestPluginShadowingABuiltin: a plugin claiming a built-in's name is
// ignored, with a warning, like a command a shell builtin hides.
func TestPluginShadowingABuiltin(t *testing.T) {
	plugins := t.TempDir()
	// The faucet binary run without arguments is not a plugin; a script that
	// serves the built-in csv connector claims the name "csv".
	script := "#!/bin/sh\nexec " + faucetBin + " connector serve csv\n"
	path := filepath.Join(plugins, "my-csv")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	logger, logged := testLog(t)
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), PluginDirs: []string{plugins}, Logger: logger})
	if err != nil {
		t.Fatalf("a plugin named like a built-in broke discovery: %v", err)
	}
	defer func() {
		h.Close()
		assertNoChildren(t)
	}()
	if c, ok := h.Lookup("csv"); !ok || !c.Builtin {
		t.Errorf("csv = %+v, want the built-in", c)
	}
	if !strings.Contains(logged.String(), `using="the built-in connector" ignoring=`+path) {
		t.Errorf("no warning naming the hidden plugin:\n%s", logged.String())
	}
}

func TestPluginFailingTheHandshake(t *testing.T) {
	for name, script := range map[string]string{
		"not-a-plugin":                       "#!/bin/sh\necho hello, I am not a plugin\n",
		"crashes":                            "#!/bin/sh\necho 'panic: boom' >&2\nexit 2\n",
		"serves-faucet-without-cookie-check": "#!/bin/sh\nexec " + faucetBin + " version\n",
	} {
		t.Run(name, func(t *testing.T) {
			plugins := t.TempDir()
			path := filepath.Join(plugins, name)
			if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), PluginDirs: []string{plugins}, Logger: testLogger(t)})
			if err == nil || !strings.Contains(err.Error(), "plugin "+path+": handshake") {
				t.Fatalf("error = %v, want a handshake failure naming %s", err, path)
			}
			assertNoChildren(t)
		})
	}
}

func TestNonExecutableFilesAreIgnored(t *testing.T) {
	plugins := t.TempDir()
	if err := os.WriteFile(filepath.Join(plugins, "README.txt"), []byte("not a plugin"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, plugins)
	if got, want := len(h.Connectors()), len(builtinSpecs()); got != want {
		t.Errorf("found %d connectors, want the %d built-ins", got, want)
	}
}

func TestCheck(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	os.WriteFile(in, []byte("a\n1\n"), 0o644)
	for _, tc := range []struct {
		role pipeline.Role
		cfg  pipeline.ConnectorConfig
		ok   bool
		msg  string
	}{
		{pipeline.RoleSource, cfg("csv", map[string]any{"path": in}), true, "1 readable file(s)"},
		{pipeline.RoleSource, cfg("jsonl", map[string]any{"path": filepath.Join(dir, "none*.jsonl")}), false, "no regular file matches"},
		{pipeline.RoleSink, cfg("jsonl", map[string]any{"path": filepath.Join(dir, "new", "out.jsonl")}), true, "can write in " + dir},
		{pipeline.RoleSource, cfg("generate", map[string]any{"count": 1}), true, "no probes"},
	} {
		items, err := h.Check(context.Background(), tc.role, tc.cfg)
		if err != nil || len(items) != 1 || items[0].OK != tc.ok || !strings.Contains(items[0].Message, tc.msg) {
			t.Errorf("check %s %s: %+v, %v; want ok=%v and %q", tc.role, tc.cfg.Type, items, err, tc.ok, tc.msg)
		}
	}
}
