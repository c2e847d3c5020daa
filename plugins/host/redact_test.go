package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// leakyEnv makes the test binary serve the leaky connector as a plugin.
const leakyEnv = "FAUCET_HOST_TEST_LEAKY_PLUGIN"

// leaky is a sink that logs its password every way a plugin can: through
// slog (go-plugin's log stream) and on standard error, while it opens, and
// again once its session is over, when the test asks for it. Its first
// batch waits until the test has seen the session's lines.
type leaky struct{}

type leakyConfig struct {
	Password string `json:"password"`
	// Release, once it exists, lets the first batch through; Idle, once it
	// exists, makes the plugin log again.
	Release string `json:"release"`
	Idle    string `json:"idle"`
}

func (leaky) Spec() sdk.Spec {
	return sdk.Spec{Name: "leaky", Version: "0.0.1", SinkSchema: json.RawMessage(`{
	  "type": "object", "additionalProperties": false, "required": ["password", "release", "idle"],
	  "properties": {
	    "password": {"type": "string", "writeOnly": true},
	    "release": {"type": "string"},
	    "idle": {"type": "string"}
	  }
	}`)}
}

func (leaky) Open(_ context.Context, config json.RawMessage) (sdk.Writer, error) {
	var cfg leakyConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	slog.Info("opening with password "+cfg.Password, "password", cfg.Password, "dsn", map[string]string{"url": "db://u:" + cfg.Password + "@h"})
	fmt.Fprintln(os.Stderr, "connecting as u:"+cfg.Password)
	go func() {
		_ = waitFor(cfg.Idle)
		slog.Warn("idle reconnect", "password", cfg.Password)
		fmt.Fprintln(os.Stderr, "idle as u:"+cfg.Password)
	}()
	return &leakyWriter{release: cfg.Release}, nil
}

type leakyWriter struct{ release string }

func (w *leakyWriter) Write(context.Context, sdk.Batch) error {
	return waitFor(w.release)
}

func (*leakyWriter) Close(context.Context) error { return nil }
func (*leakyWriter) Abort(context.Context) error { return nil }

// waitFor waits, in the plugin process, until the test creates path.
func waitFor(path string) error {
	return testwait.Wait(time.Minute, func() error {
		_, err := os.Stat(path)
		return err
	})
}

// installSelf puts a plugin named name into a new directory, a script that
// runs this test binary with env set, which makes it serve one of the
// test connectors, and returns the directory.
func installSelf(t *testing.T, name, env string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %s\n", env, self)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPluginLogsAreRedactedAndAttributed runs a plugin that logs a secret.
// What it logs during a session lands in the run's log, tagged with the
// connector and the row, the secret masked; what it logs once idle lands in
// faucet's own log, masked too. The secret appears in neither.
func TestPluginLogsAreRedactedAndAttributed(t *testing.T) {
	const secret = "hunter2-s3cret"
	for _, mode := range []string{"pipe", "relay"} {
		t.Run(mode, func(t *testing.T) {
			hostLog, global := testLog(t)
			h, err := host.New(context.Background(), host.Options{
				Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog, PluginDirs: []string{installSelf(t, "leaky", leakyEnv)},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				h.Close()
				assertNoChildren(t)
			})
			var conns pipeline.Connectors = h
			if mode == "relay" {
				conns = relayOnly{h}
			}
			dir := t.TempDir()
			release, idle := filepath.Join(dir, "release"), filepath.Join(dir, "idle")
			doc := fmt.Sprintf("version: 1\npipeline:\n  source: {type: generate, config: {count: 3}}\n  sink: {type: leaky, config: {password: \"${env:LEAKY_PASSWORD}\", release: %q, idle: %q}}\n", release, idle)
			plan, err := pipeline.Load([]byte(doc), pipeline.LoadOptions{Catalog: h, Env: func(name string) (string, bool) {
				return secret, name == "LEAKY_PASSWORD"
			}})
			if err != nil {
				t.Fatal(err)
			}

			runLog := &lockedBuffer{}
			done := make(chan error, 1)
			go func() {
				_, err := pipeline.Execute(context.Background(), plan, pipeline.ExecuteOptions{
					Connectors: conns, Logger: slog.New(slog.NewTextHandler(runLog, nil)),
				})
				done <- err
			}()
			// The session is held open until its lines have arrived.
			waitLog(t, "run", runLog,
				`msg="opening with password [REDACTED]" row_id=default connector=leaky`,
				"password=[REDACTED]",
				"dsn=map[url:db://u:[REDACTED]@h]",
				`msg="connecting as u:[REDACTED]" row_id=default connector=leaky stream=stderr`,
			)
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("execute: %v", err)
			}

			// Now idle, the plugin logs again: into faucet's own log.
			if err := os.WriteFile(idle, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitLog(t, "faucet", global,
				`msg="idle reconnect" connector=leaky password=[REDACTED]`,
				`msg="idle as u:[REDACTED]" connector=leaky stream=stderr`,
			)
			for name, log := range map[string]*lockedBuffer{"run": runLog, "faucet": global} {
				if strings.Contains(log.String(), secret) {
					t.Errorf("the secret is in the %s log:\n%s", name, log)
				}
			}
			if strings.Contains(runLog.String(), "idle") {
				t.Errorf("idle output reached the run's log:\n%s", runLog)
			}
			if strings.Contains(global.String(), "opening") {
				t.Errorf("the session's output reached faucet's own log:\n%s", global)
			}
		})
	}
}

// waitLog waits until every want is in some line of log.
func waitLog(t *testing.T, name string, log *lockedBuffer, wants ...string) {
	t.Helper()
	missing := func() []string {
		text := log.String()
		var out []string
		for _, w := range wants {
			if !strings.Contains(text, w) {
				out = append(out, w)
			}
		}
		return out
	}
	testwait.Until(t, 10*time.Second, func() error {
		if m := missing(); len(m) > 0 {
			return fmt.Errorf("the %s log lacks %q:\n%s", name, m, log)
		}
		return nil
	})
}
