package host_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/host"
)

// TestPluginsGetACleanEnvironment starts a plugin that records its
// environment: it holds the minimum a process needs and exactly what
// Options.Env passes on, and nothing else of faucet's own environment.
func TestPluginsGetACleanEnvironment(t *testing.T) {
	t.Setenv("FAUCET_TEST_PRIVATE", "must-not-leak")
	t.Setenv("FAUCET_TEST_PASSED", "copied")
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
	h := newHostWith(t, host.Options{
		PluginDirs: []string{dir},
		Env:        []string{"FAUCET_TEST_PASSED", "FAUCET_TEST_EXPLICIT=given", "FAUCET_TEST_UNSET"},
	})
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
