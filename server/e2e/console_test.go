package e2e

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The web console end to end: the browser suite (server/console/web/test)
// drives Debian's Chromium through playwright-core against one real faucet
// serve, a cluster member on a SQLite file, so the cluster page has a
// member to show, with an admin and a viewer principal (and a --no-auth
// server beside it, for the console without a sign-in). scripts/test.sh installs Chromium and the suite's npm
// packages; without them the test is skipped, except under CI, where that
// is a failure.

// consoleWeb is the console's front-end package, from this package.
var consoleWeb = filepath.Join("..", "console", "web")

// consoleTools returns node and Chromium, or skips (fails under CI) when
// the machine lacks them.
func consoleTools(tb testing.TB) (node, chromium string) {
	tb.Helper()
	missing := func(what string) {
		msg := what + " is missing: run scripts/console-tools.sh --browser (the README's test command does)"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium (" + chromium + ")")
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(consoleWeb, "node_modules", pkg, "package.json")); err != nil {
			missing("the console's npm package " + pkg)
		}
	}
	return node, chromium
}

// runNode runs a script of the console's test folder with env, streaming its
// output into the test log, and fails the test when it fails.
func runNode(tb testing.TB, node string, env []string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(node, args...)
	cmd.Dir = consoleWeb
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var all strings.Builder
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		tb.Log(sc.Text())
		all.WriteString(sc.Text() + "\n")
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		tb.Fatalf("%s %s: %v", node, strings.Join(args, " "), err)
	}
	return all.String()
}

// consoleShots is where the suite saves its screenshots: a build-output
// directory the repository ignores.
func consoleShots(tb testing.TB) string {
	dir := os.Getenv("FAUCET_CONSOLE_SHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "build", "console")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return abs
}

func TestConsoleInABrowser(t *testing.T) {
	node, chromium := consoleTools(t)
	dir := t.TempDir()
	const admin, viewer = "console-admin-token-0123", "console-viewer-token-4567"
	principals := filepath.Join(dir, "principals.yaml")
	err := os.WriteFile(principals, []byte("principals:\n"+
		"  - {name: ada, token: "+admin+", role: admin}\n"+
		"  - {name: vera, token: "+viewer+", role: viewer}\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, serverOpts{
		history: "sqlite:" + filepath.Join(dir, "history.db"),
		args: []string{"--auth-config", principals, "--cluster", "--cluster-poll-secs", "0.2",
			"--max-concurrent-runs", "4", "--log-level", "warn", "--callback-allow-host", "127.0.0.1"},
		token: admin,
		bin:   fastBin,
	})
	// A second, tokenless server: the console must work without a sign-in.
	open := start(t, serverOpts{args: []string{"--no-auth", "--log-level", "warn"}, bin: fastBin})
	work := filepath.Join(dir, "out")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	shots := consoleShots(t)
	env := []string{
		"FAUCET_URL=" + s.url, "FAUCET_TOKEN=" + admin, "FAUCET_VIEWER_TOKEN=" + viewer,
		"FAUCET_NOAUTH_URL=" + open.url, "FAUCET_SHOTS=" + shots, "FAUCET_WORK=" + work, "FAUCET_CHROMIUM=" + chromium,
	}
	// FAUCET_README_SHOT=$PWD/docs/console-runs.png renews the README's
	// picture of the runs page from this run.
	if shot := os.Getenv("FAUCET_README_SHOT"); shot != "" {
		env = append(env, "FAUCET_README_SHOT="+shot)
	}
	runNode(t, node, env, "--test", "--test-reporter=spec", "--test-concurrency=1", "test/browser.test.mjs")
	t.Logf("screenshots in %s", shots)
}

// TestConsoleRoutes: what the console adds to the server, and --no-ui.
func TestConsoleRoutes(t *testing.T) {
	t.Parallel()
	get := func(s *server, path, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	want := func(resp *http.Response, status int, contentType string) {
		t.Helper()
		if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), contentType) {
			t.Errorf("GET %s: %d %s, want %d %s", resp.Request.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), status, contentType)
		}
	}
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

	ui := start(t, serverOpts{})
	want(get(ui, "/", ""), http.StatusOK, "text/html")
	want(get(ui, "/runs/01ab/logs", browser), http.StatusOK, "text/html")
	want(get(ui, "/no/such/page", "application/json"), http.StatusNotFound, "application/problem+json")
	want(get(ui, "/no/such/page", ""), http.StatusNotFound, "application/problem+json")
	want(get(ui, "/v1/no-such-route", browser), http.StatusNotFound, "application/problem+json")
	want(get(ui, "/assets/no-such-file.js", browser), http.StatusNotFound, "application/problem+json")
	want(get(ui, "/v1/runs", browser), http.StatusUnauthorized, "application/problem+json")

	off := start(t, serverOpts{args: []string{"--no-ui"}})
	want(get(off, "/", browser), http.StatusNotFound, "application/problem+json")
	want(get(off, "/runs", browser), http.StatusNotFound, "application/problem+json")
	if r := get(off, "/healthz", ""); r.StatusCode != http.StatusOK {
		t.Errorf("--no-ui: /healthz %d", r.StatusCode)
	}
}
