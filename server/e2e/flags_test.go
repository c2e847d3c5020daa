package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/openapi/client"
)

var createdTokenRE = regexp.MustCompile(`^faucet serve created an admin API token \(shown once; stored in (\S+), mode 0600\):$`)

func TestFirstStartCreatesAndReusesAnAdminToken(t *testing.T) {
	dataDir := t.TempDir()
	s := start(t, serverOpts{dataDir: dataDir, ownAuth: true})
	if _, err := s.stderr.await(createdTokenRE, s.exited, 10*time.Second); err != nil {
		t.Fatalf("the first start announced no admin token: %v\n%s", err, s.stderr.String())
	}
	path, token := printedToken(t, s)
	if want := filepath.Join(dataDir, "history.db.token"); path != want {
		t.Fatalf("token stored in %s, want beside the history file: %s", path, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", info.Mode().Perm())
	}
	stored, err := os.ReadFile(path)
	if err != nil || strings.TrimSpace(string(stored)) != token {
		t.Fatalf("token file holds %q, the server printed %q (%v)", stored, token, err)
	}
	requireAdmin(t, s, token)
	if r, err := s.client("").ListRunsWithResponse(context.Background(), nil); err != nil || r.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("a request without the token: %v %d, want 401", err, r.StatusCode())
	}
	s.stop()

	// A restart reuses the stored token without printing it again.
	again := start(t, serverOpts{dataDir: dataDir, ownAuth: true})
	if log := again.stderr.String(); strings.Contains(log, token) || strings.Contains(log, "created an admin API token") {
		t.Fatalf("the restart printed a token:\n%s", log)
	}
	requireAdmin(t, again, token)
}

// printedToken returns the file and the token the server announced: the
// token is the first non-empty line after the announcement.
func printedToken(t *testing.T, s *server) (path, token string) {
	t.Helper()
	s.stderr.mu.Lock()
	defer s.stderr.mu.Unlock()
	for i, l := range s.stderr.lines {
		m := createdTokenRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for _, next := range s.stderr.lines[i+1:] {
			if tok := strings.TrimSpace(next); tok != "" {
				return m[1], tok
			}
		}
	}
	t.Fatalf("no token after the announcement")
	return "", ""
}

// requireAdmin checks that token is accepted for an admin-only request.
func requireAdmin(t *testing.T, s *server, token string) {
	t.Helper()
	r, err := s.client(token).ListAuditWithResponse(context.Background(), nil)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("admin request with the token: %v %d %s", err, r.StatusCode(), r.Body)
	}
	w, err := s.client(token).WhoamiWithResponse(context.Background())
	if err != nil || w.JSON200 == nil || w.JSON200.Role != client.Admin {
		t.Fatalf("whoami with the token: %v %s", err, w.Body)
	}
}

func TestEnvironmentVariablesSetFlags(t *testing.T) {
	dataDir := t.TempDir()
	const envToken = "env-admin-token-987654321"
	s := start(t, serverOpts{dataDir: dataDir, ownAuth: true, token: envToken, env: []string{
		"FAUCET_AUTH_TOKEN=" + envToken, "FAUCET_MAX_CONCURRENT_RUNS=1", "FAUCET_MAX_QUEUED_RUNS=1",
	}})
	requireAdmin(t, s, envToken)
	if _, err := os.Stat(filepath.Join(dataDir, "history.db.token")); !os.IsNotExist(err) {
		t.Fatalf("a server given FAUCET_AUTH_TOKEN created a token file anyway: %v", err)
	}
	if strings.Contains(s.stderr.String(), envToken) {
		t.Fatal("the server log shows the token")
	}

	// One run in flight and one queued fill what the variables allow.
	a := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "a.jsonl"))})
	s.await(a.RunId, client.RunStatusRunning)
	b := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "b.jsonl"))})
	r, err := s.admin().SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: generateToFile(1, filepath.Join(t.TempDir(), "c.jsonl"))})
	if err != nil || r.StatusCode() != http.StatusTooManyRequests {
		t.Fatalf("third submit with FAUCET_MAX_QUEUED_RUNS=1: %v %d %s", err, r.StatusCode(), r.Body)
	}
	for _, id := range []string{b.RunId, a.RunId} {
		if _, err := s.admin().CancelRunWithResponse(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		s.await(id, client.RunStatusCancelled)
	}
}

func TestCORSPreflightAnswersTheAllowedOrigin(t *testing.T) {
	const origin = "https://console.example.com"
	s := start(t, serverOpts{args: []string{"--cors-origin", origin}})
	preflight := func(from string) *http.Response {
		req, err := http.NewRequest(http.MethodOptions, s.url+"/v1/runs", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", from)
		req.Header.Set("Access-Control-Request-Method", http.MethodPost)
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight(origin)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), http.MethodPost) ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight from %s: %d %v", origin, resp.StatusCode, resp.Header)
	}
	if other := preflight("https://elsewhere.example.com"); other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin was allowed: %v", other.Header)
	}

	// A real request from the origin carries the allow header too.
	r, err := s.client(adminToken).ListRunsWithResponse(context.Background(), nil, func(_ context.Context, req *http.Request) error {
		req.Header.Set("Origin", origin)
		return nil
	})
	if err != nil || r.StatusCode() != http.StatusOK || r.HTTPResponse.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("list from %s: %v %d %v", origin, err, r.StatusCode(), r.HTTPResponse.Header)
	}
}

func TestDefaultConfigIsMergedUnderTheSubmittedOne(t *testing.T) {
	dir := t.TempDir()
	defaults := filepath.Join(dir, "defaults.yaml")
	unused := filepath.Join(dir, "default-sink.jsonl")
	err := os.WriteFile(defaults, []byte("version: 1\nname: from-defaults\npipeline:\n"+
		"  source: {type: generate, config: {count: 7}}\n"+
		"  sink: {type: jsonl, config: {path: \""+unused+"\"}}\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, serverOpts{args: []string{"--default-config", defaults}})

	// The submission overrides the row count and the sink path; the name and
	// the connector types come from the defaults.
	out := filepath.Join(dir, "out.jsonl")
	sub := s.submit(client.SubmitRequest{Config: "pipeline:\n  source: {config: {count: 3}}\n  sink: {config: {path: \"" + out + "\"}}\n"})
	rec := s.await(sub.RunId, client.RunStatusCompleted)
	if rec.RecordsWritten != 3 || rec.Name == nil || *rec.Name != "from-defaults" {
		t.Fatalf("merged run = %+v", rec)
	}
	if n := countLines(t, out); n != 3 {
		t.Fatalf("the submitted sink path has %d lines, want 3", n)
	}
	if n := countLinesIfExists(t, unused); n != 0 {
		t.Fatalf("the default sink path was written (%d lines)", n)
	}

	// A config that says nothing of a field takes the default whole.
	bare := s.submit(client.SubmitRequest{Config: "pipeline:\n  sink: {config: {path: \"" + out + "\"}}\n"})
	if rec := s.await(bare.RunId, client.RunStatusCompleted); rec.RecordsWritten != 7 {
		t.Fatalf("run with the default row count = %+v", rec)
	}
}

// TestPluginsRunAtALowerPriority: by default the server starts its plugins
// at nice 10, so its API stays responsive while runs use the CPU; a nice
// value out of range is refused before anything starts.
func TestPluginsRunAtALowerPriority(t *testing.T) {
	t.Parallel()
	s := start(t, serverOpts{})
	id := s.submit(client.SubmitRequest{Config: generateToFile(5, filepath.Join(t.TempDir(), "out.jsonl"))}).RunId
	s.await(id, client.RunStatusCompleted)
	pids := childPIDs(s.cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatal("no warm plugin process after a run")
	}
	for _, pid := range pids {
		// nice is field 19.
		fields := statFields(pid)
		if len(fields) < 17 || fields[16] != "10" {
			t.Errorf("plugin %d runs at nice other than 10: stat %v", pid, fields)
		}
	}

	cmd := exec.Command(faucetBin, "serve", "--plugin-nice", "25", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-auth")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--plugin-nice must be between 0 and 19 (got 25)") {
		t.Errorf("serve --plugin-nice 25: %v\n%s", err, out)
	}
}

// TestEmptyVariablesAreUnset: FAUCET_NO_AUTH= (set, but empty, as a unit
// file or an env list leaves it) must not turn authentication off; the
// server starts as without it, with its admin token.
func TestEmptyVariablesAreUnset(t *testing.T) {
	s := start(t, serverOpts{ownAuth: true, env: []string{"FAUCET_NO_AUTH=", "FAUCET_AUTH_TOKEN=", "FAUCET_MAX_QUEUED_RUNS="}})
	if _, err := s.stderr.await(createdTokenRE, s.exited, 10*time.Second); err != nil {
		t.Fatalf("the server did not create its admin token: %v\n%s", err, s.stderr.String())
	}
	if r, err := s.client("").ListRunsWithResponse(context.Background(), nil); err != nil || r.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("a request without a token under FAUCET_NO_AUTH=: %v %d, want 401", err, r.StatusCode())
	}
	if strings.Contains(s.stderr.String(), "authentication is OFF") {
		t.Fatalf("the server says authentication is off:\n%s", s.stderr.String())
	}
}

// --idempotency-retention-secs 0 is the Rust faucet's "expire at once": a
// key repeated later submits a new run instead of replaying.
func TestZeroIdempotencyRetentionExpiresAtOnce(t *testing.T) {
	s := start(t, serverOpts{args: []string{"--idempotency-retention-secs", "0"}})
	req := client.SubmitRequest{Config: generateToFile(1, filepath.Join(t.TempDir(), "out.jsonl")), IdempotencyKey: ptr("nightly")}
	first := s.submit(req)
	s.await(first.RunId, client.RunStatusCompleted)
	second := s.submit(req)
	if second.RunId == first.RunId || second.Replayed {
		t.Fatalf("a key repeated with retention 0 replayed: %+v after %+v", second, first)
	}
}
