package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
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

// cliResult is what one client command did.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cli runs faucet with args and only the FAUCET_* variables in env, with a
// data directory of its own under home.
func cli(t *testing.T, home string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(faucetBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAUCET_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{"HOME=" + home}, env...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("faucet %v: %v", args, err)
	}
	return res
}

func (r cliResult) ok(t *testing.T, what string) cliResult {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s exited %d\n%s%s", what, r.code, r.stdout, r.stderr)
	}
	return r
}

// TestClientCommands drives the client commands a new user types against
// a real server: the address without a scheme, tokens from flags and from
// the environment, the hints of a 401, runs submit --set, the read routes
// (audit, whoami, the catalog), JSON output and run-id completion.
func TestClientCommands(t *testing.T) {
	s := start(t, serverOpts{})
	home := t.TempDir()
	hostPort := strings.TrimPrefix(s.url, "http://")
	auth := []string{"--server", hostPort, "--token", adminToken}
	env := []string{"FAUCET_SERVER=" + hostPort, "FAUCET_TOKEN=" + adminToken}

	if r := cli(t, home, nil, append([]string{"whoami"}, auth...)...).ok(t, "whoami"); r.stdout != "token (admin)\n" {
		t.Errorf("whoami: %q", r.stdout)
	}
	tokenFile := filepath.Join(home, ".local", "share", "faucet", "history.db.token")
	for _, tc := range []struct {
		env  []string
		args []string
		say  string
	}{
		{[]string{"FAUCET_TOKEN="}, []string{"--server", hostPort}, "no token was sent: pass --token or set FAUCET_TOKEN; a faucet serve with the default data directory created its admin token in " + tokenFile},
		{nil, []string{"--server", hostPort, "--token", "wrong"}, "the server did not accept the token given by --token or FAUCET_TOKEN"},
	} {
		r := cli(t, home, tc.env, append([]string{"runs", "list"}, tc.args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "401 unauthorized") || !strings.Contains(r.stderr, tc.say) {
			t.Errorf("runs list %v: exit %d\n%s", tc.args, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, adminToken) {
			t.Errorf("the 401 hint shows the token:\n%s", r.stderr)
		}
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(cfg, []byte(generateToFile(25, filepath.Join(dir, "out.jsonl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	var rec client.RunRecord
	r := cli(t, home, env, "runs", "submit", cfg, "--set", "pipeline.source.config.count=3", "--wait", "-o", "json").ok(t, "runs submit --set")
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec.Status != client.RunStatusCompleted || rec.RecordsWritten != 3 {
		t.Fatalf("runs submit --set count=3: %+v (%v)\n%s", rec, err, r.stdout)
	}
	if r := cli(t, home, env, "runs", "submit", cfg, "--set", "oops"); r.code != 1 || !strings.Contains(r.stderr, "--set oops: want key.path=value") {
		t.Errorf("runs submit with a bad --set: exit %d\n%s", r.code, r.stderr)
	}
	if r := cli(t, home, env, "runs", "list", "-q").ok(t, "runs list -q"); r.stdout != rec.RunId+"\n" {
		t.Errorf("runs list -q printed %q, want the one run's id (the bad --set submitted nothing)", r.stdout)
	}
	if r := cli(t, home, env, "runs", "get", rec.RunId).ok(t, "runs get"); !regexp.MustCompile(`(?m)^status:\s+completed$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^records written:\s+3$`).MatchString(r.stdout) {
		t.Errorf("runs get:\n%s", r.stdout)
	}
	var cancel struct {
		RunID     string `json:"run_id"`
		Requested bool   `json:"requested"`
	}
	r = cli(t, home, env, "runs", "cancel", rec.RunId, "--json").ok(t, "runs cancel")
	if err := json.Unmarshal([]byte(r.stdout), &cancel); err != nil || cancel.RunID != rec.RunId || cancel.Requested {
		t.Errorf("runs cancel --json of a finished run: %s (%v)", r.stdout, err)
	}
	r = cli(t, home, env, "runs", "logs", rec.RunId, "-o", "json").ok(t, "runs logs")
	var last client.LogLine
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Line != "run completed" || last.Seq == 0 {
		t.Errorf("runs logs -o json ends with %q (%v)", lines[len(lines)-1], err)
	}
	for _, l := range lines {
		if strings.Contains(l, "starting plugin") || strings.Contains(l, "plugin process exited") {
			t.Errorf("the run's log holds go-plugin's process lines: %s", l)
		}
	}
	if r := cli(t, home, env, "__complete", "runs", "get", "").ok(t, "completion"); !strings.HasPrefix(r.stdout, rec.RunId+"\t") {
		t.Errorf("completion of runs get:\n%s", r.stdout)
	}

	r = cli(t, home, env, "audit").ok(t, "audit")
	if !regexp.MustCompile(`(?m)^\S+\s+token\s+admin\s+run\.submit\s+ok\s+` + rec.RunId + `\s+127\.0\.0\.1$`).MatchString(r.stdout) {
		t.Errorf("audit lacks the submit:\n%s", r.stdout)
	}
	var entries []client.AuditEntry
	r = cli(t, home, env, "audit", "--action", "run.submit", "--json").ok(t, "audit --json")
	if err := json.Unmarshal([]byte(r.stdout), &entries); err != nil || len(entries) != 1 || entries[0].Action != "run.submit" || deref(entries[0].RunId) != rec.RunId {
		t.Errorf("audit --action run.submit --json: %s (%v)", r.stdout, err)
	}

	r = cli(t, home, env, "connectors", "list", "--server", hostPort).ok(t, "connectors list --server")
	if !regexp.MustCompile(`(?m)^gate\s+source\s`).MatchString(r.stdout) {
		t.Errorf("connectors list --server does not show the server's plugin gate:\n%s", r.stdout)
	}
	var spec struct {
		Name         string   `json:"name"`
		Roles        []string `json:"roles"`
		SourceSchema struct {
			Properties map[string]struct {
				WriteOnly bool `json:"writeOnly"`
			} `json:"properties"`
		} `json:"source_schema"`
	}
	r = cli(t, home, env, "connectors", "spec", "postgres", "--server", hostPort, "-o", "json").ok(t, "connectors spec --server")
	if err := json.Unmarshal([]byte(r.stdout), &spec); err != nil || spec.Name != "postgres" || len(spec.Roles) != 2 || !spec.SourceSchema.Properties["url"].WriteOnly {
		t.Errorf("connectors spec postgres --server: %+v (%v)", spec, err)
	}
	if r := cli(t, home, env, "connectors", "spec", "nope", "--server", hostPort); r.code != 1 || !strings.Contains(r.stderr, `the server has no connector "nope"`) {
		t.Errorf("connectors spec nope --server: exit %d\n%s", r.code, r.stderr)
	}
}
