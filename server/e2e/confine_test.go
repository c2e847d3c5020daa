package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// submitRefused submits cfg with c and fails the test unless it is a 400
// bad_config whose message holds every part of want.
func submitRefused(t *testing.T, c *client.ClientWithResponses, what, cfg string, want ...string) string {
	t.Helper()
	resp, err := c.SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	p := resp.ApplicationproblemJSON400
	if resp.StatusCode() != http.StatusBadRequest || p == nil || p.Error.Code != "bad_config" {
		t.Fatalf("%s: %d %s, want 400 bad_config", what, resp.StatusCode(), resp.Body)
	}
	for _, w := range want {
		if !strings.Contains(p.Error.Message, w) {
			t.Fatalf("%s: the refusal %q does not say %q", what, p.Error.Message, w)
		}
	}
	return p.Error.Message
}

// realTempDir is a fresh directory with every symlink of its path resolved,
// as the server reports its roots.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFileRootsConfineRuns: the paths of a run stay within the server's
// file roots, and its own files stay out of reach even inside them.
func TestFileRootsConfineRuns(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		root, outside := realTempDir(t), realTempDir(t)
		// The data directory and the auth config lie inside the root: they
		// are refused by what they are, not by where.
		dataDir := filepath.Join(root, "data")
		authFile := filepath.Join(root, "auth.yaml")
		if err := os.WriteFile(authFile, []byte("principals:\n  - {name: otto, token: operator-token-123, role: operator}\n  - {name: ada, token: admin-token-456, role: admin}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "in.csv"), []byte("id,name\n1,Ada\n2,Grace\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "secret.csv"), []byte("user,password\nroot,hunter2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s := start(t, serverOpts{history: h.url(t), dataDir: dataDir, token: "admin-token-456",
			args: []string{"--auth-config", authFile, "--file-root", root}})
		op := s.client("operator-token-123")

		// The escapes of the issue, refused at submit with a 400.
		submitRefused(t, op, "/etc/passwd into /etc", "version: 1\npipeline:\n  source: {type: csv, config: {path: /etc/passwd, header: false}}\n  sink: {type: jsonl, config: {path: /etc/anything.jsonl}}\n",
			"/etc/passwd", "/etc/anything.jsonl", "outside the file roots", root)
		submitRefused(t, op, "the auth config", fmt.Sprintf("version: 1\npipeline:\n  source: {type: csv, config: {path: %q}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n", authFile),
			authFile, "server's own files")
		submitRefused(t, op, "the auth config, relative", "version: 1\npipeline:\n  source: {type: jsonl, config: {path: auth.yaml}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n",
			"auth.yaml", "server's own files")
		submitRefused(t, op, "dot dot", "version: 1\npipeline:\n  source: {type: csv, config: {path: ../x.csv}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n",
			"outside the file roots")
		if err := os.Symlink(filepath.Join(outside, "secret.csv"), filepath.Join(root, "link.csv")); err != nil {
			t.Fatal(err)
		}
		submitRefused(t, op, "a symlink out of the root", "version: 1\npipeline:\n  source: {type: csv, config: {path: link.csv}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n",
			"link.csv", "outside the file roots")
		if h.name == "sqlite" {
			history := filepath.Join(dataDir, "history.db")
			submitRefused(t, op, "the history database", fmt.Sprintf("version: 1\npipeline:\n  source: {type: sqlite, config: {path: %q, table: faucet_audit}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n", history),
				"history.db", "server's own files")
			submitRefused(t, op, "overwriting the history database", fmt.Sprintf("version: 1\npipeline:\n  source: {type: csv, config: {path: in.csv}}\n  sink: {type: jsonl, config: {path: %q}}\n", history),
				"server's own files")
			submitRefused(t, op, "the history's WAL", fmt.Sprintf("version: 1\npipeline:\n  source: {type: csv, config: {path: in.csv}}\n  sink: {type: jsonl, config: {path: %q, write_mode: append}}\n", history+"-wal"),
				"server's own files")
			// A hard link is the same file by another name: refused by
			// identity, at submit, and when a glob finds it as the run opens it.
			if err := os.Link(history, filepath.Join(root, "innocent.db")); err != nil {
				t.Fatal(err)
			}
			submitRefused(t, op, "a hard link to the history database", "version: 1\npipeline:\n  source: {type: sqlite, config: {path: innocent.db, table: faucet_audit}}\n  sink: {type: jsonl, config: {path: audit.jsonl}}\n",
				"innocent.db", "server's own files")
			if err := os.Mkdir(filepath.Join(root, "links"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(history, filepath.Join(root, "links", "a.csv")); err != nil {
				t.Fatal(err)
			}
			id := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: csv, config: {path: \"links/*.csv\"}}\n  sink: {type: jsonl, config: {path: audit.jsonl}}\n"}).RunId
			rec := s.await(id, client.RunStatusFailed)
			if rec.Error == nil || !strings.Contains(*rec.Error, "server's own files") {
				t.Fatalf("a glob finding a hard link to the history database: %+v", deref(rec.Error))
			}
		}
		// A symlink that appears after the submit check (a glob matches it)
		// fails the invocation, naming the path and the roots.
		if err := os.Mkdir(filepath.Join(root, "drop"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "secret.csv"), filepath.Join(root, "drop", "a.csv")); err != nil {
			t.Fatal(err)
		}
		id := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: csv, config: {path: \"drop/*.csv\"}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n"}).RunId
		rec := s.await(id, client.RunStatusFailed)
		if rec.Error == nil || !strings.Contains(*rec.Error, filepath.Join(root, "drop", "a.csv")) || !strings.Contains(*rec.Error, "outside the file roots ("+root+")") {
			t.Fatalf("a glob matching a symlink out of the root: %+v", deref(rec.Error))
		}
		if _, err := os.Stat(filepath.Join(root, "out.jsonl")); err == nil {
			t.Fatal("a refused run wrote its output")
		}

		// Within the root, relative paths resolve in it.
		ok := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: csv, config: {path: in.csv}}\n  sink: {type: jsonl, config: {path: sub/out.jsonl}}\n"})
		if rec := s.await(ok.RunId, client.RunStatusCompleted); rec.RecordsWritten != 2 {
			t.Fatalf("a run within the root: %+v", rec)
		}
		if _, err := os.Stat(filepath.Join(root, "sub", "out.jsonl")); err != nil {
			t.Fatalf("the relative output is not in the root: %v", err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Fatalf("files appeared outside the root: %v", entries)
		}
	})
}

// TestTokenFileIsRefused: the admin token a server created is out of reach
// of its runs, even in a root that holds it.
func TestTokenFileIsRefused(t *testing.T) {
	t.Parallel()
	root := realTempDir(t)
	dataDir := filepath.Join(root, "data")
	s := start(t, serverOpts{dataDir: dataDir, ownAuth: true, args: []string{"--file-root", root}})
	token, err := os.ReadFile(filepath.Join(dataDir, "history.db.token"))
	if err != nil {
		t.Fatal(err)
	}
	s.opts.token = strings.TrimSpace(string(token))
	for _, path := range []string{filepath.Join(dataDir, "history.db.token"), "data/history.db.token", "data/../data/history.db.token"} {
		submitRefused(t, s.admin(), "the token file "+path, fmt.Sprintf("version: 1\npipeline:\n  source: {type: csv, config: {path: %q, header: false}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n", path),
			"server's own files")
	}
}

// TestConfigEnvironment: a config reads only the variables the operator
// allowed, and their values are masked in every run.
func TestConfigEnvironment(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		dir := realTempDir(t)
		envFile := filepath.Join(dir, "faucet.env")
		if err := os.WriteFile(envFile, []byte("FROM_FILE=file-value-7261\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		pg := testpg.Database(t)
		s := start(t, serverOpts{history: h.url(t), args: []string{"--file-root", dir, "--config-env", "ALLOWED_VALUE", "--config-env", "PG_*", "--env-file", envFile},
			env: []string{"SERVER_SECRET=do-not-leak-8812", "ALLOWED_VALUE=allowed-value-5150", "PG_TEST_URL=" + pg}})
		c := s.admin()

		msg := submitRefused(t, c, "an unlisted variable", "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}}\n  sink: {type: jsonl, config: {path: \"${env:SERVER_SECRET}.jsonl\"}}\n",
			"SERVER_SECRET", "--config-env")
		if strings.Contains(msg, "do-not-leak") {
			t.Fatalf("the refusal shows the value: %s", msg)
		}
		// A fallback does not make an unlisted name resolve, nor its absence
		// read as an empty string.
		submitRefused(t, c, "an unlisted variable with a fallback", "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}}\n  sink: {type: jsonl, config: {path: \"${env:HOME:-x}.jsonl\"}}\n",
			"HOME")

		// Allowed names resolve: one listed, one from the env file.
		id := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: generate, config: {count: 3}}\n  sink: {type: jsonl, config: {path: \"${env:ALLOWED_VALUE}-${env:FROM_FILE}.jsonl\"}}\n"}).RunId
		s.await(id, client.RunStatusCompleted)
		if _, err := os.Stat(filepath.Join(dir, "allowed-value-5150-file-value-7261.jsonl")); err != nil {
			t.Fatalf("the allowed variables did not resolve: %v", err)
		}
		// A run that never read the variable, whose error quotes its value,
		// shows it masked, and so do its logs.
		other := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: postgres, config: {url: \"${env:PG_TEST_URL}\", query: \"SELECT 'allowed-value-5150'::int AS n\"}}\n  sink: {type: jsonl, config: {path: other.jsonl}}\n"}).RunId
		rec := s.await(other, client.RunStatusFailed)
		if rec.Error == nil || strings.Contains(*rec.Error, "allowed-value-5150") || !strings.Contains(*rec.Error, "[REDACTED]") {
			t.Fatalf("another run's error: %v", deref(rec.Error))
		}
		for _, l := range s.logs(other, 0, 10000) {
			if strings.Contains(l.Line, "allowed-value-5150") {
				t.Fatalf("another run's log shows the value: %s", l.Line)
			}
		}
		if strings.Contains(s.stderr.String(), "do-not-leak-8812") || strings.Contains(s.stderr.String(), "allowed-value-5150") {
			t.Fatal("the server log shows an environment value")
		}
	})
}

// TestClusterMemberInterpolatesWithItsOwnPolicy: in cluster mode the member
// that claims a run loads its config with its own environment policy: a
// variable the submitting member allows but the claiming one does not
// fails the run there, naming the variable.
func TestClusterMemberInterpolatesWithItsOwnPolicy(t *testing.T) {
	t.Parallel()
	hist := testpg.Database(t)
	dir := realTempDir(t)
	member := func(env []string, args ...string) *server {
		all := append([]string{"--cluster", "--lease-ttl-secs", clusterLease, "--cluster-poll-secs", clusterPoll, "--max-concurrent-runs", "1", "--file-root", dir}, args...)
		return start(t, serverOpts{history: hist, args: all, bin: fastBin, env: env})
	}
	a := member([]string{"ONLY_ON_A=a-value-3141"}, "--config-env", "ONLY_ON_A")
	// a's one slot is taken by a held run, so b claims the next one.
	held := a.submit(client.SubmitRequest{Config: holding(1, filepath.Join(dir, "held.jsonl"))}).RunId
	a.await(held, client.RunStatusRunning)
	b := member([]string{"ONLY_ON_A=b-value-2718"})
	id := a.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}}\n  sink: {type: jsonl, config: {path: \"${env:ONLY_ON_A}.jsonl\"}}\n"}).RunId
	rec := b.await(id, client.RunStatusFailed)
	if rec.Error == nil || !strings.Contains(*rec.Error, "ONLY_ON_A") || !strings.Contains(*rec.Error, "--config-env") {
		t.Fatalf("the run b claimed: %+v", deref(rec.Error))
	}
	for _, f := range []string{"a-value-3141.jsonl", "b-value-2718.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("%s was written", f)
		}
	}
	if r, err := a.admin().CancelRunWithResponse(context.Background(), held); err != nil || r.StatusCode() >= 300 {
		t.Fatalf("cancel the held run: %v", err)
	}
}

// TestSwapBetweenCheckAndOpen: a path that passes the submit check is
// checked again by the plugin when it opens it. The run waits in the queue
// behind a held one while the directory it reads is swapped for a symlink
// out of the root, so the swap lands between the check and the open every
// time; the plugin refuses the path, and nothing outside is read.
func TestSwapBetweenCheckAndOpen(t *testing.T) {
	t.Parallel()
	root, outside := realTempDir(t), realTempDir(t)
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, text := range map[string]string{filepath.Join(dir, "in.csv"): "id\n1\n", filepath.Join(outside, "in.csv"): "id\nhunter2\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := start(t, serverOpts{args: []string{"--file-root", root, "--max-concurrent-runs", "1"}})
	held := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(root, "held.jsonl"))}).RunId
	s.await(held, client.RunStatusRunning)
	// One run reads through the directory, one writes into it.
	if err := os.WriteFile(filepath.Join(root, "in.csv"), []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: csv, config: {path: d/in.csv}}\n  sink: {type: jsonl, config: {path: out.jsonl}}\n"}).RunId
	written := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: csv, config: {path: in.csv}}\n  sink: {type: jsonl, config: {path: d/out.jsonl}}\n"}).RunId
	if rec := s.get(read); rec.Status != client.RunStatusQueued {
		t.Fatalf("the run reading d/ is %s, want queued behind the held run", rec.Status)
	}
	if err := os.Rename(dir, filepath.Join(root, "d-aside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	if r, err := s.admin().CancelRunWithResponse(context.Background(), held); err != nil || r.StatusCode() >= 300 {
		t.Fatalf("cancel the held run: %v", err)
	}
	for id, path := range map[string]string{read: "d/in.csv", written: dir} {
		rec := s.await(id, client.RunStatusFailed, client.RunStatusCompleted)
		if rec.Status != client.RunStatusFailed || rec.Error == nil || !strings.Contains(*rec.Error, path) || !strings.Contains(*rec.Error, "outside the file roots ("+root+")") {
			t.Fatalf("a run whose directory became a symlink out of the root after its check: %s %s", rec.Status, deref(rec.Error))
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "out.jsonl")); err == nil && strings.Contains(string(b), "hunter2") {
		t.Fatalf("the run read the file outside the root: %s", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files appeared outside the root: %v", entries)
	}
}
