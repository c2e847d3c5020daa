// Package openapi_test checks the committed OpenAPI documents: they match
// what the server's code describes, they lint clean, and the SDKs four
// generators make from them work against a live faucet serve, directly and
// through a validating proxy.
package openapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/faucet-dev/faucet/server/api"
)

// TestDocumentsMatchTheCode fails when the committed documents drift from
// the API's Go types (regenerate with `task generate:openapi`).
func TestDocumentsMatchTheCode(t *testing.T) {
	t.Parallel()
	for file, version := range map[string]string{"openapi.yaml": "3.1", "openapi-3.0.yaml": "3.0"} {
		want, err := api.Document(version)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `task generate:openapi` and commit the result", file)
		}
	}
}

// TestREADMEShowsTheCompiledExample keeps the README's TypeScript example
// the one the package's tests compile.
func TestREADMEShowsTheCompiledExample(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join("ts", "test", "readme-example.ts"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)// README example start\n(.*?)\n// README example end`).FindSubmatch(src)
	if m == nil {
		t.Fatal("readme-example.ts has no README example markers")
	}
	example := strings.Split(string(m[1]), "\n")
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if block := "```ts\n" + strings.Join(example, "\n") + "\n```"; !bytes.Contains(readme, []byte(block)) {
		t.Errorf("README.md does not show the example of ts/test/readme-example.ts:\n%s", block)
	}
	if len(example) != 10 {
		t.Errorf("the README example has %d lines, want 10", len(example))
	}
}

// TestDocumentsLintClean runs Redocly's recommended rules on both
// documents: no error and no warning.
func TestDocumentsLintClean(t *testing.T) {
	t.Parallel()
	bin := npmTools(t)
	for _, doc := range []string{"openapi.yaml", "openapi-3.0.yaml"} {
		cmd := exec.Command(filepath.Join(bin, "redocly"), "lint", "--format=json", doc)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var report struct {
			Totals   struct{ Errors, Warnings int }
			Problems []struct {
				RuleID  string `json:"ruleId"`
				Message string
			}
		}
		if jerr := json.Unmarshal(stdout.Bytes(), &report); jerr != nil {
			t.Fatalf("redocly lint %s: %v (%v)\n%s%s", doc, err, jerr, stdout.Bytes(), stderr.Bytes())
		}
		if err != nil || report.Totals.Errors+report.Totals.Warnings != 0 {
			t.Errorf("redocly lint %s: %d errors, %d warnings: %+v (%v)", doc, report.Totals.Errors, report.Totals.Warnings, report.Problems, err)
		}
	}
}

// The SDK scenario: what every client does against the servers, in its own
// language (ts/test/scenario.test.ts, testdata/sdkcheck/heyapi/scenario.ts,
// testdata/sdkcheck/go/{ogen,oapi}/main.go): submit with an idempotency key,
// replay it (replayed: true), a 409 for the key with another payload, poll
// to completion, cancel a held run (202, then 200), page through the
// scenario's runs one a page and a 400 for an unknown cursor, read the logs
// as a JSON page and as the event stream, a typed 404 and 401, and tokenless
// calls to a --no-auth server. Each client runs it once directly and once
// through Prism's validating proxy; Prism must report no violation.
func TestSDKScenario(t *testing.T) {
	bin := npmTools(t)
	faucet, plugins := buildFaucet(t)
	const token = "sdk-scenario-token-0123456789"
	direct := startServer(t, faucet, plugins, "--auth-token", token)
	open := startServer(t, faucet, plugins, "--no-auth")
	proxied, openProxied := startPrism(t, bin, direct), startPrism(t, bin, open)
	// Both Go clients build in one module, once, for the whole test.
	goDir := t.TempDir()

	type client struct {
		name string
		// build compiles the client and returns the command that runs
		// the scenario with it.
		build func(t *testing.T) []string
	}
	clients := []client{
		{"openapi-typescript", func(t *testing.T) []string {
			// The package's build, then its tests, which import it as a
			// user's code does.
			run(t, "ts", filepath.Join(bin, "tsc"), "-p", "tsconfig.json")
			run(t, "ts", filepath.Join(bin, "tsc"), "-p", "tsconfig.test.json")
			return []string{"node", "--test", "--test-reporter=spec", "ts/dist-test/"}
		}},
		{"hey-api", func(t *testing.T) []string { return buildHeyAPI(t, bin) }},
		{"ogen", func(t *testing.T) []string { return goScenario(t, goDir, "ogen") }},
		{"oapi-codegen", func(t *testing.T) []string { return goScenario(t, goDir, "oapi") }},
	}
	t.Run("clients", func(t *testing.T) {
		for _, c := range clients {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				cmd := c.build(t)
				for _, via := range []struct{ name, url, open string }{{"direct", direct, open}, {"prism", proxied.url, openProxied.url}} {
					t.Run(via.name, func(t *testing.T) {
						t.Parallel()
						name := c.name + "-" + via.name
						sink := t.TempDir()
						env := []string{
							"FAUCET_URL=" + via.url, "FAUCET_NOAUTH_URL=" + via.open, "FAUCET_TOKEN=" + token, "FAUCET_SCENARIO=" + name,
							"FAUCET_CONFIG=" + pipeline(name, "{type: generate, config: {count: 3}}", filepath.Join(sink, "done.jsonl")),
							"FAUCET_HOLD_CONFIG=" + pipeline(name, "{type: gate, config: {rows: 1, hold: true}}", filepath.Join(sink, "held.jsonl")),
						}
						runEnv(t, ".", env, cmd[0], cmd[1:]...)
					})
				}
			})
		}
	})
	for _, p := range []*prism{proxied, openProxied} {
		if v := p.violations(); len(v) > 0 {
			t.Errorf("Prism in front of %s reported violations:\n%s", p.upstream, strings.Join(v, "\n"))
		}
		// Every client went through it: 4 whoami calls at least.
		if n := len(p.logs.matching(regexp.MustCompile(`get /v1/whoami .*Request received`))); n < len(clients) {
			t.Errorf("Prism in front of %s forwarded %d whoami calls, want %d or more:\n%s", p.upstream, n, len(clients), p.logs)
		}
	}

	// /metrics after all that traffic passes the checks `promtool check
	// metrics` makes (promtool runs client_golang's promlint).
	resp, err := http.Get(direct + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("faucet_")) {
		t.Fatalf("GET /metrics: %d %v\n%s", resp.StatusCode, err, body)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
}

// pipeline is a scenario's pipeline config with source, writing to path.
func pipeline(name, source, path string) string {
	return fmt.Sprintf("version: 1\nname: %s\npipeline:\n  source: %s\n  sink: {type: jsonl, config: {path: %q}}\n", name, source, path)
}

// buildHeyAPI generates the hey-api client into a scratch directory next to
// its scenario and compiles both with tsc --strict.
func buildHeyAPI(t *testing.T, bin string) []string {
	dir := t.TempDir()
	for _, f := range []string{"scenario.ts", "tsconfig.json"} {
		copyFile(t, filepath.Join("testdata", "sdkcheck", "heyapi", f), filepath.Join(dir, f))
	}
	doc, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	// tsc and node resolve @types/node and the like from here.
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	run(t, dir, filepath.Join(bin, "openapi-ts"), "-i", doc, "-o", filepath.Join(dir, "gen"))
	run(t, dir, filepath.Join(bin, "tsc"), "-p", "tsconfig.json")
	return []string{"node", filepath.Join(dir, "out", "scenario.js")}
}

var (
	goBuildOnce sync.Once
	goBuildErr  error
)

// goScenario builds the Go scenario of client (ogen or oapi) in dir: both
// clients are generated from the committed documents into one scratch module
// whose requirements are faucet's own, so the builds use the versions go.mod
// pins.
func goScenario(t *testing.T, dir, client string) []string {
	goBuildOnce.Do(func() { goBuildErr = buildGoScenarios(dir) })
	if goBuildErr != nil {
		t.Fatal(goBuildErr)
	}
	return []string{filepath.Join(dir, "bin", client)}
}

func buildGoScenarios(dir string) error {
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	mod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module faucet.test/sdkcheck"))
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), mod, 0o644); err != nil {
		return err
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "sdkcheck", "go"))); err != nil {
		return err
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return err
	}
	oapiConfig, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		return err
	}
	oapiConfig = regexp.MustCompile(`(?m)^output: .*$`).ReplaceAll(oapiConfig, []byte("output: "+filepath.Join(dir, "oapi", "client", "client.gen.go")))
	if err := os.WriteFile(filepath.Join(dir, "oapi-codegen.yaml"), oapiConfig, 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "oapi", "client"), 0o755); err != nil {
		return err
	}
	steps := [][]string{
		{"go", "run", "github.com/ogen-go/ogen/cmd/ogen", "--config", "openapi/ogen.yml", "--target", filepath.Join(dir, "ogen", "faucet"), "--package", "faucet", "--clean", "openapi/openapi.yaml"},
		{"go", "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen", "-config", filepath.Join(dir, "oapi-codegen.yaml"), "openapi/openapi-3.0.yaml"},
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %w\n%s", s, err, out)
		}
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "bin")+string(filepath.Separator), "./ogen", "./oapi")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the Go scenarios: %w\n%s", err, out)
	}
	return nil
}

var (
	npmOnce sync.Once
	npmBin  string
	npmErr  error
)

// npmTools installs the npm packages package-lock.json pins (once) and
// returns their bin directory. Node.js and npm are required: the script
// installs them when it may and fails otherwise.
func npmTools(t *testing.T) string {
	t.Helper()
	npmOnce.Do(func() {
		cmd := exec.Command("bash", filepath.Join("scripts", "npm-tools.sh"))
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("install the npm tools: %w\n%s", err, out)
			return
		}
		npmBin, npmErr = filepath.Abs(filepath.Join("node_modules", ".bin"))
	})
	if npmErr != nil {
		t.Fatal(npmErr)
	}
	return npmBin
}

// buildFaucet builds faucet and the test plugin gate, whose source holds a
// run open until it is cancelled.
func buildFaucet(t *testing.T) (bin, pluginDir string) {
	t.Helper()
	dir := t.TempDir()
	bin, pluginDir = filepath.Join(dir, "faucet"), filepath.Join(dir, "plugins")
	run(t, "..", "go", "build", "-o", bin, "./cmd/faucet")
	run(t, "..", "go", "build", "-o", filepath.Join(pluginDir, "faucet-gate"), "./server/e2e/testdata/gate")
	return bin, pluginDir
}

var listenRE = regexp.MustCompile(`faucet serve: listening on (http://\S+)`)

// startServer runs faucet serve on a free loopback port until the test
// ends and returns its URL once it is ready.
func startServer(t *testing.T, bin, pluginDir string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	// The scenarios' runs write in temporary directories: the one they all
	// are in is the file root.
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--plugin-dir", pluginDir, "--file-root", os.TempDir()}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "xdg")}
	url := make(chan string, 1)
	logs := &lines{}
	startLogged(t, cmd, logs, func(line string) {
		if m := listenRE.FindStringSubmatch(line); m != nil {
			url <- m[1]
		}
	})
	select {
	case u := <-url:
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if resp, err := http.Get(u + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return u
				}
			}
		}
		t.Fatalf("faucet serve %v never became ready\n%s", args, logs)
	case <-time.After(time.Minute):
		t.Fatalf("faucet serve %v did not start\n%s", args, logs)
	}
	return ""
}

// prism is a Prism proxy validating requests and responses against
// openapi.yaml.
type prism struct {
	url, upstream string
	logs          *lines
}

var violationRE = regexp.MustCompile(`(?i)violation`)

func (p *prism) violations() []string { return p.logs.matching(violationRE) }

func startPrism(t *testing.T, bin, upstream string) *prism {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(filepath.Join(bin, "prism"), "proxy", "openapi.yaml", upstream,
		"--errors", "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	p := &prism{url: "http://127.0.0.1:" + strconv.Itoa(port), upstream: upstream, logs: &lines{}}
	ready := make(chan struct{})
	var once sync.Once
	startLogged(t, cmd, p.logs, func(line string) {
		if strings.Contains(line, "Prism is listening") {
			once.Do(func() { close(ready) })
		}
	})
	select {
	case <-ready:
	case <-time.After(time.Minute):
		t.Fatalf("Prism did not start\n%s", p.logs)
	}
	return p
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lines collects a process's output.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s)
}

func (l *lines) matching(re *regexp.Regexp) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.all {
		if re.MatchString(s) {
			out = append(out, s)
		}
	}
	return out
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// startLogged starts cmd in its own process group, which the test's end
// stops, and passes each line of its output to logs and to watch.
func startLogged(t *testing.T, cmd *exec.Cmd, logs *lines, watch func(string)) {
	t.Helper()
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			logs.add(sc.Text())
			watch(sc.Text())
		}
	}()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		w.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		<-done
	})
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	runEnv(t, dir, nil, name, args...)
}

// runEnv runs a command to its end and fails the test, with its output,
// when it fails.
func runEnv(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
