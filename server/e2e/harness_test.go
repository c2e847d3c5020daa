// Package e2e tests faucet serve end to end: a real faucet process on
// 127.0.0.1 with real plugin processes and a real history database (a SQLite
// file, or a PostgreSQL database from the test server), driven through the
// Go client generated from the OpenAPI document.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

var (
	faucetBin string
	// fastBin is faucet built without the race detector, for the suites
	// that start many servers (cluster mode): their subject is what the
	// processes do together, and the race build would make them crawl.
	fastBin   string
	pluginDir string
	// profileDir, from BENCH_CPUPROFILE, is where every server started
	// writes its CPU profile (pprof) when it exits: the binaries are built
	// with the faucet_cpuprofile tag (cmd/faucet/cpuprofile.go).
	profileDir = os.Getenv("BENCH_CPUPROFILE")
	profiles   atomic.Int64
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faucet-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		faucetBin = filepath.Join(dir, "faucet")
		fastBin = faucetBin
		pluginDir = filepath.Join(dir, "plugins")
		builds := [][]string{
			{"-o", faucetBin, "github.com/faucet-dev/faucet/cmd/faucet"},
			{"-o", filepath.Join(pluginDir, "faucet-gate"), "./testdata/gate"},
		}
		if raceEnabled {
			fastBin = filepath.Join(dir, "faucet-norace")
			builds = append(builds, []string{"-o", fastBin, "github.com/faucet-dev/faucet/cmd/faucet"})
		}
		for _, b := range builds {
			args := []string{"build"}
			if raceEnabled && b[1] != fastBin {
				args = append(args, "-race")
			}
			if profileDir != "" {
				args = append(args, "-tags", "faucet_cpuprofile")
			}
			cmd := exec.Command("go", append(args, b...)...)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "build:", err)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// history is one kind of run-history database the suite runs against.
type history struct {
	name string
	// url returns a fresh history URL; "" means the default SQLite file in
	// the server's data directory.
	url func(t *testing.T) string
}

var histories = []history{
	{name: "sqlite", url: func(*testing.T) string { return "" }},
	{name: "postgres", url: func(t *testing.T) string { return testpg.Database(t) }},
}

// eachHistory runs f as a subtest per history database.
func eachHistory(t *testing.T, f func(t *testing.T, h history)) {
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			f(t, h)
		})
	}
}

const adminToken = "e2e-admin-token-0123456789"

// serverOpts configures one faucet serve process.
type serverOpts struct {
	history string
	dataDir string
	// args are extra serve flags; without an auth flag among them the server
	// runs with --auth-token adminToken, unless ownAuth is set.
	args []string
	// ownAuth passes no auth flag at all, so the server picks its own auth
	// (an environment variable, or the admin token it creates).
	ownAuth bool
	env     []string
	// token is the admin token the helpers send; default adminToken.
	token string
	// bin is the faucet binary to run; default faucetBin.
	bin string
	// unready returns once the server listens, without waiting for /readyz
	// to answer 200.
	unready bool
}

// server is a running faucet serve process.
type server struct {
	t       testing.TB
	opts    serverOpts
	cmd     *exec.Cmd
	url     string
	stderr  *lineLog
	exited  chan struct{}
	waitErr error
}

var listenRE = regexp.MustCompile(`^faucet serve: listening on (http://\S+)$`)

// start launches faucet serve and waits until /readyz answers 200.
func start(t testing.TB, o serverOpts) *server {
	t.Helper()
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", o.dataDir, "--plugin-dir", pluginDir}
	if o.history != "" {
		args = append(args, "--history", o.history)
	}
	hasAuth, hasRoot := false, false
	for _, a := range o.args {
		if a == "--no-auth" || a == "--auth-config" || a == "--auth-token" {
			hasAuth = true
		}
		hasRoot = hasRoot || a == "--file-root"
	}
	if !hasAuth && !o.ownAuth {
		args = append(args, "--auth-token", adminToken)
	}
	if !hasRoot {
		// The tests' runs read and write in temporary directories: the one
		// they all are in is the file root, unless a test sets its own.
		args = append(args, "--file-root", os.TempDir())
	}
	args = append(args, o.args...)
	var profileEnv []string
	if profileDir != "" {
		// The server's and its plugins' profiles, in a directory of their own.
		dir := filepath.Join(profileDir, fmt.Sprintf("%s-%d", strings.NewReplacer("/", "_", "=", "-").Replace(t.Name()), profiles.Add(1)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		profileEnv = []string{"FAUCET_DEBUG_CPUPROFILE=" + dir}
		args = append(args, "--plugin-env", "FAUCET_DEBUG_CPUPROFILE")
	}
	bin := o.bin
	if bin == "" {
		bin = faucetBin
	}
	cmd := exec.Command(bin, args...)
	env := []string{"XDG_DATA_HOME=" + filepath.Join(o.dataDir, "xdg")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAUCET_") && !strings.HasPrefix(kv, "XDG_DATA_HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(env, profileEnv...), o.env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, opts: o, cmd: cmd, stderr: newLineLog(), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		// Read stderr to its end before Wait, which closes the pipe.
		s.stderr.consume(pipe)
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)

	line, err := s.stderr.await(listenRE, s.exited, 60*time.Second)
	if err != nil {
		t.Fatalf("faucet serve did not start: %v\n%s", err, s.stderr.String())
	}
	s.url = listenRE.FindStringSubmatch(line)[1]
	if o.unready {
		return s
	}
	testwait.Until(t, 30*time.Second, func() error {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		return fmt.Errorf("faucet serve never became ready\n%s", s.stderr.String())
	})
	return s
}

// stop ends the process (SIGTERM, then SIGKILL) if it still runs.
func (s *server) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.t.Errorf("faucet serve ignored SIGTERM for a minute\n%s", s.stderr.String())
	}
}

// apiHTTP is the HTTP client of every API client: it keeps as many idle
// connections per server as the benchmarks have clients (16), where
// http.DefaultClient keeps 2 and so would open a connection for most of
// their requests, a cost no real client with keep-alive pays.
var apiHTTP = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}()

// client returns an API client sending token (none when empty).
func (s *server) client(token string) *client.ClientWithResponses {
	s.t.Helper()
	c, err := client.NewClientWithResponses(s.url, client.WithHTTPClient(apiHTTP), client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// admin is the client of the admin token.
func (s *server) admin() *client.ClientWithResponses {
	if s.opts.token != "" {
		return s.client(s.opts.token)
	}
	return s.client(adminToken)
}

// submit submits body and fails the test unless it is accepted.
func (s *server) submit(body client.SubmitRequest) client.SubmitResponse {
	s.t.Helper()
	resp, err := s.admin().SubmitRunWithResponse(context.Background(), nil, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.JSON202 == nil {
		s.t.Fatalf("submit: %d %s", resp.StatusCode(), resp.Body)
	}
	return *resp.JSON202
}

// get returns a run record.
func (s *server) get(id string) client.RunRecord {
	s.t.Helper()
	resp, err := s.admin().GetRunWithResponse(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.JSON200 == nil {
		s.t.Fatalf("get %s: %d %s", id, resp.StatusCode(), resp.Body)
	}
	return *resp.JSON200
}

// await polls a run until its status is one of want.
func (s *server) await(id string, want ...client.RunStatus) client.RunRecord {
	s.t.Helper()
	var rec client.RunRecord
	testwait.Until(s.t, 2*time.Minute, func() error {
		rec = s.get(id)
		if slices.Contains(want, rec.Status) {
			return nil
		}
		if isTerminal(rec.Status) {
			s.t.Fatalf("run %s is %s (error %s), want %v: %+v\n%s", id, rec.Status, deref(rec.Error), want, rec, s.stderr.String())
		}
		return fmt.Errorf("run %s is %s, want %v: %+v\n%s", id, rec.Status, want, rec, s.stderr.String())
	})
	return rec
}

// awaitLog polls a run's persisted logs until a line matches re.
func (s *server) awaitLog(id string, re *regexp.Regexp) {
	s.t.Helper()
	testwait.Until(s.t, time.Minute, func() error {
		for _, l := range s.logs(id, 0, 10000) {
			if re.MatchString(l.Line) {
				return nil
			}
		}
		return fmt.Errorf("no log line of run %s matched %s\n%s", id, re, s.stderr.String())
	})
}

// logs reads one page of a run's persisted log lines.
func (s *server) logs(id string, after int64, limit int64) []client.LogLine {
	s.t.Helper()
	format := client.StreamRunLogsParamsFormatJsonl
	resp, err := s.admin().StreamRunLogs(context.Background(), id, &client.StreamRunLogsParams{Format: &format, After: &after, Limit: &limit})
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		s.t.Fatalf("logs: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var out []client.LogLine
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l client.LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			s.t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if l.Seq > 0 {
			out = append(out, l)
		}
	}
	return out
}

func isTerminal(s client.RunStatus) bool {
	return s == client.RunStatusCompleted || s == client.RunStatusFailed || s == client.RunStatusCancelled
}

// lineLog collects a process's stderr and lets tests wait for a line.
type lineLog struct {
	mu     sync.Mutex
	lines  []string
	change chan struct{}
}

func newLineLog() *lineLog { return &lineLog{change: make(chan struct{})} }

func (l *lineLog) consume(r interface{ Read([]byte) (int, error) }) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		close(l.change)
		l.change = make(chan struct{})
		l.mu.Unlock()
	}
}

// await returns the first line matching re, waiting for it.
func (l *lineLog) await(re *regexp.Regexp, exited <-chan struct{}, timeout time.Duration) (string, error) {
	deadline := time.After(timeout)
	seen := 0
	for {
		l.mu.Lock()
		for ; seen < len(l.lines); seen++ {
			if re.MatchString(l.lines[seen]) {
				line := l.lines[seen]
				l.mu.Unlock()
				return line, nil
			}
		}
		ch := l.change
		l.mu.Unlock()
		select {
		case <-ch:
		case <-exited:
			return "", fmt.Errorf("process exited")
		case <-deadline:
			return "", fmt.Errorf("no line matched %s within %s", re, timeout)
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	const keep = 60
	lines := l.lines
	if len(lines) > keep {
		lines = lines[len(lines)-keep:]
	}
	return strings.Join(lines, "\n")
}

// pipeline configs used by the tests.

// generateToFile writes rows generated rows to path.
func generateToFile(rows int, path string) string {
	return fmt.Sprintf("version: 1\nname: gen\npipeline:\n  source: {type: generate, config: {count: %d}}\n  sink: {type: jsonl, config: {path: %q}}\n", rows, path)
}

// holding emits rows then keeps the run in flight until it is cancelled.
// Its sink overwrites path, so a cancel leaves path as it was.
func holding(rows int, path string) string {
	return fmt.Sprintf("version: 1\nname: hold\npipeline:\n  source: {type: gate, config: {rows: %d, hold: true}}\n  sink: {type: jsonl, config: {path: %q}}\n", rows, path)
}

// holdingAppend is holding with a sink that appends to path, so a cancel
// commits exactly the acknowledged rows.
func holdingAppend(rows int, path string) string {
	return fmt.Sprintf("version: 1\nname: hold\npipeline:\n  source: {type: gate, config: {rows: %d, hold: true}}\n  sink: {type: jsonl, config: {path: %q, write_mode: append}}\n", rows, path)
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// send sends req and returns the answer, its body read.
func send(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(out)
}
