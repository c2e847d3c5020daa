package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPluginDirectories installs the third-party example plugin the three
// ways a user can — --plugin-dir, FAUCET_PLUGIN_DIR and the default
// directory under XDG_DATA_HOME — and checks each makes it a connector, found
// where it was put.
func TestPluginDirectories(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "faucet-lines")
	build := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..", "plugins", "examples", "lines")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example plugin: %v\n%s", err, out)
	}
	install := func(dir string) string {
		t.Helper()
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "faucet-lines")
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A connector in two directories is taken from the first, and the
	// warning names both: no error that breaks every command.
	t.Run("shadowed", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		first, second := install(filepath.Join(dir, "first")), install(filepath.Join(dir, ".data", "faucet", "plugins"))
		r := runFaucet(t, dir, nil, "connectors", "list", "--plugin-dir", filepath.Dir(first))
		mustSucceed(t, r)
		if !regexp.MustCompile(`(?m)^lines\s.*` + regexp.QuoteMeta(first)).MatchString(r.stdout) {
			t.Errorf("connectors list does not take lines from the first directory, %s:\n%s", first, r.stdout)
		}
		if !strings.Contains(r.stderr, "connector found twice") || !strings.Contains(r.stderr, "using="+first) || !strings.Contains(r.stderr, "ignoring="+second) {
			t.Errorf("no warning naming both files:\n%s", r.stderr)
		}
	})
	for _, route := range []string{"flag", "env", "default"} {
		t.Run(route, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var env []string
			args := []string{"connectors", "list"}
			var path string
			switch route {
			case "flag":
				path = install(filepath.Join(dir, "flagged"))
				args = append(args, "--plugin-dir", filepath.Dir(path))
			case "env":
				path = install(filepath.Join(dir, "listed"))
				env = append(env, "FAUCET_PLUGIN_DIR="+filepath.Join(dir, "empty")+string(os.PathListSeparator)+filepath.Dir(path))
			case "default":
				// command sets XDG_DATA_HOME to dir/.data.
				path = install(filepath.Join(dir, ".data", "faucet", "plugins"))
			}
			r := runFaucet(t, dir, env, args...)
			mustSucceed(t, r)
			if !regexp.MustCompile(`(?m)^lines\s.*` + regexp.QuoteMeta(path)).MatchString(r.stdout) {
				t.Errorf("connectors list does not show lines from %s:\n%s\n%s", path, r.stdout, r.stderr)
			}
		})
	}
}
