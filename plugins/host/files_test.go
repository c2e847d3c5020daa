package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/internal/testfs"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// confinedHost is a host confining its connectors to a fresh root (holding
// in.csv and a sqlite database) beside a directory holding what no run may
// read: secret.csv outside the root, and a server file inside it.
type confinedHost struct {
	conns         map[string]pipeline.Connectors
	root, outside string
	serverFile    string
}

func newConfinedHost(t *testing.T) confinedHost {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := confinedHost{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{c.root, c.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(c.root, "in.csv"), "id,name\n1,Ada\n2,Grace\n")
	write(t, filepath.Join(c.outside, "secret.csv"), "user,password\nroot,hunter2\n")
	c.serverFile = filepath.Join(c.root, "history.db.token")
	write(t, c.serverFile, "token\ns3cret\n")
	fi, err := os.Stat(c.serverFile)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, _ := sdk.FileID(fi)
	files := sdk.NewFiles([]string{c.root}, []sdk.DeniedFile{{Path: c.serverFile, Device: dev, Inode: ino}})
	h := newHostWith(t, host.Options{Files: func() *sdk.Files { return files }})
	c.conns = map[string]pipeline.Connectors{"pipe": h, "relay": relayOnly{h}}
	return c
}

func write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestConfinedConnectors(t *testing.T) {
	c := newConfinedHost(t)
	if err := os.Symlink(filepath.Join(c.outside, "secret.csv"), filepath.Join(c.root, "link.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c.outside, filepath.Join(c.root, "outdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(c.serverFile, filepath.Join(c.root, "innocent.csv")); err != nil {
		t.Fatal(err)
	}
	for mode, conns := range c.conns {
		t.Run(mode, func(t *testing.T) {
			run := func(source, sink pipeline.ConnectorConfig) error {
				_, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{RowID: "default", Source: source, Sink: sink}),
					pipeline.ExecuteOptions{Connectors: conns})
				return err
			}
			// A relative path is within the first root; an absolute one in it too.
			if err := run(cfg("csv", map[string]any{"path": "in.csv"}), cfg("jsonl", map[string]any{"path": "out/" + mode + ".jsonl"})); err != nil {
				t.Fatalf("csv → jsonl within the root: %v", err)
			}
			if n := countLines(t, filepath.Join(c.root, "out", mode+".jsonl")); n != 2 {
				t.Fatalf("wrote %d records, want 2", n)
			}
			if err := run(cfg("csv", map[string]any{"path": filepath.Join(c.root, "in.csv")}), cfg("sqlite", map[string]any{"path": mode + ".db", "table": "people"})); err != nil {
				t.Fatalf("csv → sqlite within the root: %v", err)
			}
			if err := run(cfg("sqlite", map[string]any{"path": mode + ".db", "table": "people"}), cfg("jsonl", map[string]any{"path": mode + "-back.jsonl"})); err != nil {
				t.Fatalf("sqlite → jsonl within the root: %v", err)
			}

			refused := []struct {
				what         string
				source, sink pipeline.ConnectorConfig
				want         string
			}{
				{"a source outside the roots", cfg("csv", map[string]any{"path": "/etc/passwd"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "outside the file roots"},
				{"a sink outside the roots", cfg("csv", map[string]any{"path": "in.csv"}), cfg("jsonl", map[string]any{"path": filepath.Join(c.outside, "x.jsonl")}), "outside the file roots"},
				{"a symlink out of the root", cfg("csv", map[string]any{"path": "link.csv"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "outside the file roots"},
				{"a symlinked directory", cfg("csv", map[string]any{"path": "outdir/secret.csv"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "outside the file roots"},
				{"a sink through a symlinked directory", cfg("csv", map[string]any{"path": "in.csv"}), cfg("csv", map[string]any{"path": "outdir/x.csv"}), "outside the file roots"},
				{"dot dot", cfg("jsonl", map[string]any{"path": "../outside/secret.csv"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "outside the file roots"},
				{"a glob out of the root", cfg("csv", map[string]any{"path": "../outside/*.csv"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "outside the file roots"},
				{"a server file", cfg("csv", map[string]any{"path": c.serverFile}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "server's own files"},
				{"a hard link to a server file", cfg("csv", map[string]any{"path": "innocent.csv"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "server's own files"},
				{"a sink replacing a server file", cfg("csv", map[string]any{"path": "in.csv"}), cfg("jsonl", map[string]any{"path": c.serverFile}), "server's own files"},
				{"sqlite reading a server file", cfg("sqlite", map[string]any{"path": c.serverFile, "table": "t"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "server's own files"},
				{"sqlite outside the roots", cfg("sqlite", map[string]any{"path": filepath.Join(c.outside, "x.db"), "table": "t"}), cfg("jsonl", map[string]any{"path": "x.jsonl"}), "outside the file roots"},
				{"a sqlite sink through a symlinked directory", cfg("csv", map[string]any{"path": "in.csv"}), cfg("sqlite", map[string]any{"path": "outdir/x.db", "table": "t"}), "outside the file roots"},
			}
			for _, r := range refused {
				err := run(r.source, r.sink)
				if err == nil || !strings.Contains(err.Error(), r.want) {
					t.Errorf("%s: got %v, want an error saying %q", r.what, err, r.want)
					continue
				}
				if strings.Contains(r.want, "roots") && !strings.Contains(err.Error(), c.root) {
					t.Errorf("%s: the error %q does not name the file roots", r.what, err)
				}
			}
			// ATTACH (and VACUUM INTO, which attaches) would open a path of
			// the query's choosing.
			for _, q := range []string{
				"ATTACH DATABASE '" + filepath.Join(c.outside, "a.db") + "' AS a",
				"ATTACH DATABASE 'file:" + filepath.Join(c.outside, "a.db") + "?vfs=os' AS a",
				"VACUUM INTO '" + filepath.Join(c.outside, "v.db") + "'",
				"VACUUM INTO 'file:" + filepath.Join(c.outside, "v.db") + "?vfs=os'",
			} {
				err := run(cfg("sqlite", map[string]any{"path": mode + ".db", "query": q}), cfg("jsonl", map[string]any{"path": "x.jsonl"}))
				if err == nil {
					t.Errorf("the sqlite source ran %q", q)
				}
			}
		})
	}
	entries, err := os.ReadDir(c.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files appeared outside the root: %v", entries)
	}
	if b, _ := os.ReadFile(c.serverFile); string(b) != "token\ns3cret\n" {
		t.Errorf("the server file changed: %q", b)
	}
}

// TestConfinedRenameRace: while a directory of the root is swapped for a
// symlink out of it and back, over and over, a plugin process reads a file
// through it run after run. Each open resolves beneath the root when it
// happens, so a run reads the file inside or fails; none reads the file
// outside.
func TestConfinedRenameRace(t *testing.T) {
	c := newConfinedHost(t)
	dir := filepath.Join(c.root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "secret.csv"), "user\ninside\n")
	stop := testfs.SwapDir(t, dir, c.outside)
	defer stop()
	read, refused := 0, 0
	for i := range 60 {
		out := filepath.Join(c.root, fmt.Sprintf("race-%d.jsonl", i))
		_, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{RowID: "default",
			Source: cfg("csv", map[string]any{"path": "d/secret.csv"}), Sink: cfg("jsonl", map[string]any{"path": out})}),
			pipeline.ExecuteOptions{Connectors: c.conns["pipe"]})
		if err != nil {
			// Mid-swap the path may also be missing or not a directory.
			msg := err.Error()
			if !strings.Contains(msg, "outside the file roots") && !strings.Contains(msg, "no such file") && !strings.Contains(msg, "not a directory") {
				t.Fatalf("run %d failed for another reason: %s", i, msg)
			}
			refused++
			continue
		}
		got := readJSONL(t, out)
		if len(got) != 1 || got[0]["user"] != "inside" {
			t.Fatalf("run %d read %v through a directory swapped for a symlink out of the root", i, got)
		}
		read++
	}
	t.Logf("%d runs read the file inside, %d were refused or found no file", read, refused)
}

// TestThirdPartyPluginsAndTheRoots: a third-party plugin built against
// today's SDK is told the roots with every call and, opening its files
// through sdk.FilesFrom, is confined as the built-ins are; one built
// against protocol 1.0 cannot be told, and the host warns naming it.
func TestThirdPartyPluginsAndTheRoots(t *testing.T) {
	c := newConfinedHost(t)
	write(t, filepath.Join(c.root, "in.txt"), "one\ntwo\n")
	write(t, filepath.Join(c.outside, "secret.txt"), "hunter2\n")
	if err := os.Symlink(filepath.Join(c.outside, "secret.txt"), filepath.Join(c.root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	files := sdk.NewFiles([]string{c.root}, nil)
	plugins := t.TempDir()
	install(t, linesBin, plugins, "faucet-lines")
	hostLog, logged := testLog(t)
	h, err := host.New(context.Background(), host.Options{
		Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog,
		PluginDirs: []string{plugins}, Files: func() *sdk.Files { return files },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	run := func(conns pipeline.Connectors, source, sink pipeline.ConnectorConfig) error {
		_, err := pipeline.Execute(context.Background(), plan(pipeline.Invocation{RowID: "default", Source: source, Sink: sink}),
			pipeline.ExecuteOptions{Connectors: conns, Logger: hostLog})
		return err
	}
	if err := run(h, cfg("lines", map[string]any{"path": "in.txt"}), cfg("lines", map[string]any{"path": "copy.txt"})); err != nil {
		t.Fatalf("lines → lines within the root: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(c.root, "copy.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("the copy within the root: %q (%v)", b, err)
	}
	for _, r := range []struct {
		what         string
		source, sink pipeline.ConnectorConfig
	}{
		{"an absolute path outside", cfg("lines", map[string]any{"path": filepath.Join(c.outside, "secret.txt")}), cfg("jsonl", map[string]any{"path": "x.jsonl"})},
		{"dot dot", cfg("lines", map[string]any{"path": "../outside/secret.txt"}), cfg("jsonl", map[string]any{"path": "x.jsonl"})},
		{"a symlink out of the root", cfg("lines", map[string]any{"path": "link.txt"}), cfg("jsonl", map[string]any{"path": "x.jsonl"})},
		{"a sink outside", cfg("lines", map[string]any{"path": "in.txt"}), cfg("lines", map[string]any{"path": filepath.Join(c.outside, "x.txt")})},
	} {
		if err := run(h, r.source, r.sink); err == nil || !strings.Contains(err.Error(), "outside the file roots") {
			t.Errorf("the lines plugin, %s: got %v, want it refused as outside the file roots", r.what, err)
		}
	}
	if entries, _ := os.ReadDir(c.outside); len(entries) != 2 {
		t.Errorf("files appeared outside the root: %v", entries)
	}

	oldDir := buildLinesAt(t, protocol10Revision)
	old, err := host.New(context.Background(), host.Options{
		Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog,
		PluginDirs: []string{oldDir}, Files: func() *sdk.Files { return files },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	if err := run(old, cfg("lines", map[string]any{"path": filepath.Join(c.root, "in.txt")}), cfg("jsonl", map[string]any{"path": "old.jsonl"})); err != nil {
		t.Fatalf("the protocol 1.0 plugin: %v", err)
	}
	if !containsLine(logged.String(), "is not told the file roots", "connector=lines", "path="+filepath.Join(oldDir, "faucet-lines")) {
		t.Errorf("no warning names the protocol 1.0 plugin that cannot be confined:\n%s", logged.String())
	}
}
