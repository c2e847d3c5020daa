package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// faucet runs the client commands against s.
func faucetCLI(t *testing.T, s *server, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(faucetBin, append([]string{"runs", "--server", s.url, "--token", adminToken}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestRunsCommands(t *testing.T) {
	eachHistory(t, testRunsCommands)
}

func testRunsCommands(t *testing.T, h history) {
	s := start(t, serverOpts{history: h.url(t)})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(cfg, []byte(generateToFile(25, filepath.Join(dir, "out.jsonl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := faucetCLI(t, s, "submit", cfg, "--wait", "--label", "env=test", "--output", "json")
	if err != nil {
		t.Fatalf("runs submit --wait: %v\n%s", err, out)
	}
	var rec struct {
		RunID          string            `json:"run_id"`
		Status         string            `json:"status"`
		RecordsWritten int               `json:"records_written"`
		Labels         map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil || rec.Status != "completed" || rec.RecordsWritten != 25 || rec.Labels["env"] != "test" {
		t.Fatalf("submit --wait printed %q (%v)", out, err)
	}
	if out, err = faucetCLI(t, s, "list"); err != nil || !strings.Contains(out, rec.RunID) || !strings.Contains(out, "completed") {
		t.Fatalf("runs list: %v\n%s", err, out)
	}
	if out, err = faucetCLI(t, s, "get", rec.RunID, "--json"); err != nil || !strings.Contains(out, `"records_written": 25`) {
		t.Fatalf("runs get: %v\n%s", err, out)
	}
	if out, err = faucetCLI(t, s, "logs", rec.RunID); err != nil || !strings.Contains(out, "run completed") {
		t.Fatalf("runs logs: %v\n%s", err, out)
	}
	if out, err = faucetCLI(t, s, "logs", "--follow", rec.RunID); err != nil || !strings.Contains(out, "[run completed]") {
		t.Fatalf("runs logs --follow: %v\n%s", err, out)
	}
	if out, err = faucetCLI(t, s, "cancel", rec.RunID); err != nil || !strings.Contains(out, "already finished") {
		t.Fatalf("runs cancel: %v\n%s", err, out)
	}
	if out, err = faucetCLI(t, s, "delete", rec.RunID); err != nil {
		t.Fatalf("runs delete: %v\n%s", err, out)
	}
	out, err = faucetCLI(t, s, "get", rec.RunID)
	if err == nil || !strings.Contains(out, "404 not_found") {
		t.Fatalf("runs get of a deleted run: %v\n%s", err, out)
	}
}
