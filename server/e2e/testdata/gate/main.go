// Command gate is a connector plugin for faucet serve's end-to-end tests. Its
// source emits a given number of rows and then, with hold, keeps the run in
// flight until faucet cancels it, so cancel, timeout and shutdown are tested
// without sleeps; with hold_ms it keeps it in flight that long and then ends,
// so a run is still running when a test kills its server; with kill_server it
// kills the faucet serve that runs it (its parent process: faucet starts
// each plugin itself) with SIGKILL once its rows are flushed, a run that
// takes down every instance that executes it. Its probe fails on request,
// and its errors can carry the secret password field, to prove faucet
// redacts it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

type config struct {
	Rows       int    `json:"rows"`
	Hold       bool   `json:"hold"`
	HoldMS     int    `json:"hold_ms"`
	FailCheck  bool   `json:"fail_check"`
	FailRead   bool   `json:"fail_read"`
	KillServer bool   `json:"kill_server"`
	Password   string `json:"password"`
}

type gate struct{}

func (gate) Spec() sdk.Spec {
	return sdk.Spec{
		Name:        "gate",
		Version:     "0.0.1",
		Description: "Test source: emits rows, then optionally holds the run open until cancelled.",
		SourceSchema: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"properties": {
				"rows": {"type": "integer", "minimum": 0},
				"hold": {"type": "boolean"},
				"hold_ms": {"type": "integer", "minimum": 0},
				"fail_check": {"type": "boolean"},
				"fail_read": {"type": "boolean"},
				"kill_server": {"type": "boolean"},
				"password": {"type": "string", "writeOnly": true}
			}
		}`),
	}
}

func (gate) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	var cfg config
	if err := sdk.DecodeConfig(req.Config, &cfg); err != nil {
		return err
	}
	if cfg.FailRead {
		return fmt.Errorf("upstream rejected password %s", cfg.Password)
	}
	for i := range cfg.Rows {
		if err := w.Append(map[string]int{"id": i}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if cfg.KillServer {
		parent := os.Getppid()
		if parent <= 1 {
			return errors.New("kill_server: the plugin has no parent process to kill")
		}
		if err := syscall.Kill(parent, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill_server: kill process %d: %w", parent, err)
		}
		// faucet starts plugins to die with it, so this one ends here too.
		<-ctx.Done()
		return ctx.Err()
	}
	if cfg.Hold {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(cfg.HoldMS) * time.Millisecond):
	}
	return nil
}

func (gate) Check(_ context.Context, _ sdk.Role, raw json.RawMessage) ([]sdk.CheckItem, error) {
	var cfg config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	if cfg.FailCheck {
		return []sdk.CheckItem{{Name: "connect", OK: false, Message: "cannot reach upstream with password " + cfg.Password}}, nil
	}
	return []sdk.CheckItem{{Name: "connect", OK: true}}, nil
}

func main() { sdk.Serve(gate{}) }
