package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// readmeBlock is one fenced code block of the README.
type readmeBlock struct {
	lang, text string
}

// readmeBlocks returns the README's fenced code blocks, in order.
func readmeBlocks(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	var cur *readmeBlock
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```")}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		t.Fatal("the README has an unclosed code block")
	}
	return blocks
}

// TestREADME runs the README's commands as written, in order, so that none
// of them (nor what it says of their output) can drift:
//   - the first set-up command starts the server, from the clone as written,
//     in a home of its own and listening on a free port (FAUCET_LISTEN; the
//     address replaces 127.0.0.1:8080 in the commands, and FAUCET_SERVER
//     points the client commands at it);
//   - the second set-up command is the test suite running this test, so it
//     is the one command not run;
//   - blocks of go commands run from the clone, the rest in a directory
//     holding a copy of examples/, as one shell script, with the faucet
//     the README's install line put on PATH;
//   - the YAML example must be one of examples/ (which TestExamples runs),
//     the Go version the one go.mod names, every serve flag a row of the
//     flag tables, and the error code of a non-JSON body one the README
//     lists.
func TestREADME(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	blocks := readmeBlocks(t, readme)

	goMod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(goMod)
	if goVersion == nil || !strings.Contains(readme, "with Go "+string(goVersion[1])+" or newer") {
		t.Errorf("the README does not name go.mod's Go version %s", goVersion[1])
	}

	var yamlSeen bool
	for _, b := range blocks {
		if b.lang != "yaml" {
			continue
		}
		yamlSeen = true
		if !isExample(t, b.text) {
			t.Errorf("this YAML example of the README is none of examples/*.yaml (less their comments):\n%s", b.text)
		}
	}
	if !yamlSeen {
		t.Error("the README shows no pipeline config")
	}

	serveHelp := runFaucet(t, t.TempDir(), nil, "serve", "--help")
	mustSucceed(t, serveHelp)
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z-]+)`).FindAllStringSubmatch(serveHelp.stdout, -1) {
		if flag := m[1]; flag != "--help" && !strings.Contains(readme, "| `"+flag) && !strings.Contains(readme, "/ `"+flag) {
			t.Errorf("the README's flag tables lack %s", flag)
		}
	}

	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	home, work, bin := t.TempDir(), t.TempDir(), t.TempDir()
	copyExamples(t, work)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAUCET_") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "GOBIN=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The go commands keep the build and module caches of the real home:
	// the new one would compile and download everything again.
	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		env = append(env, name+"="+strings.Split(string(goEnv), "\n")[i])
	}

	var serveCmd, script strings.Builder
	setup := 0
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		switch {
		case setup == 0:
			setup++
			if strings.TrimSpace(b.text) != "go run ./cmd/faucet serve" {
				t.Fatalf("the first set-up command is %q", b.text)
			}
			serveCmd.WriteString(b.text)
		case setup == 1:
			setup++
			if strings.TrimSpace(b.text) != "go run github.com/go-task/task/v3/cmd/task test" {
				t.Fatalf("the second set-up command is %q", b.text)
			}
		case isGoCommands(b.text):
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.text)
			cmd.Dir, cmd.Env = root, env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("README block\n%s\nfailed: %v\n%s", b.text, err, out)
			}
		default:
			script.WriteString(b.text)
		}
	}

	// The server, as the first set-up command starts it.
	serve := exec.Command("bash", "-c", "exec "+serveCmd.String())
	serve.Dir, serve.Env = root, append(env, "FAUCET_LISTEN=127.0.0.1:0")
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	serverLog := make(chan string, 1)
	addr := make(chan string, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := regexp.MustCompile(`^faucet serve: listening on http://(\S+)$`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		serverLog <- log.String()
	}()
	defer func() {
		// go run and the server it started share a process group.
		_ = syscall.Kill(-serve.Process.Pid, syscall.SIGINT)
		_ = serve.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", <-serverLog)
		}
	}()
	var listen string
	select {
	case listen = <-addr:
	case log := <-serverLog:
		t.Fatalf("the first set-up command did not start a server:\n%s", log)
	}

	// A body that is not JSON gets the code the README lists for 415.
	token, err := os.ReadFile(filepath.Join(home, ".local", "share", "faucet", "history.db.token"))
	if err != nil {
		t.Fatalf("the server's admin token is not where the README says: %v", err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/v1/runs", strings.NewReader("version: 1"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	problem := problemOf(t, resp)
	if resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(readme, "`"+problem+"` 415") {
		t.Errorf("a text/plain submit answers %d %q; the README does not list it", resp.StatusCode, problem)
	}

	run := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(script.String(), "127.0.0.1:8080", listen))
	run.Dir, run.Env = work, append(env, "FAUCET_SERVER="+listen)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
	// What the commands print, in the order the README runs them.
	for _, want := range []string{
		`wrote pipeline\.yaml \(generate → jsonl\)`, `pipeline\.yaml: valid, 1 invocation\(s\)`, `\n5,000 records in`, `\n5 records in`,
		`\nNAME\s+ROLES`, `\npostgres 1\.0\.0\n`, `"records_written": 1000`, `\ntoken \(admin\)\n`, `\nstatus:\s+completed\n`,
		`\[run completed\]`, `\srun\.submit\s`, `schema version \d+ \(up to date\)`, `\{"run_id":"[0-9a-f-]+","status":"queued"`,
		`\sjsonl\s+sink\s+1\s+1000\s+v1\s`, `\nschema, version 1 `, `generate:seed=1 -> file://\S+/\.local/share/faucet/files/submitted\.jsonl`, `: no changes against the config run `,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the README's commands printed nothing matching %s:\n%s", want, out)
		}
	}
	if got := len(sortedLines(t, filepath.Join(home, ".local", "share", "faucet", "files", "submitted.jsonl"))); got != 1000 {
		t.Errorf("the submitted run wrote %d records, want the starter's 1000", got)
	}
}

// isGoCommands reports whether every command of a block is a go command,
// which the README means to be run from the clone.
func isGoCommands(text string) bool {
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "go ") {
			return false
		}
	}
	return true
}

// isExample reports whether text is one of examples/*.yaml without its
// leading comment lines.
func isExample(t *testing.T, text string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		body := string(data)
		for strings.HasPrefix(body, "#") {
			_, body, _ = strings.Cut(body, "\n")
		}
		if body == text {
			return true
		}
	}
	return false
}

// problemOf returns the error code of a problem response.
func problemOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var p struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatalf("decode problem: %v", err)
	}
	return p.Error.Code
}
