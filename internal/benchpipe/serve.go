package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// served is a `faucet serve` the shard benchmark submits its runs to: a
// server outside a cluster, on a SQLite history of its own, without auth,
// listening on loopback.
type served struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	// log keeps the server's last lines, for an error.
	log *tail
}

var listeningRE = regexp.MustCompile(`^faucet serve: listening on (http://\S+)$`)

// startServe starts the server and waits until it listens.
func (b *bench) startServe(ctx context.Context) (*served, error) {
	dir, err := os.MkdirTemp(b.tmp, "serve")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, b.faucet, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
		"--history", "sqlite:"+filepath.Join(dir, "history.db"), "--no-auth", "--no-ui", "--file-root", "/")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &served{cmd: cmd, done: make(chan struct{}), log: &tail{}}
	listening := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				listening <- m[1]
			}
		}
		io.Copy(io.Discard, pipe)
	}()
	select {
	case s.url = <-listening:
		return s, nil
	case <-s.done:
		cmd.Wait()
		return nil, fmt.Errorf("faucet serve exited before it listened:\n%s", s.log)
	case <-time.After(time.Minute):
		s.stop()
		return nil, fmt.Errorf("faucet serve did not listen within a minute:\n%s", s.log)
	}
}

// stop stops the server as an operator would (SIGTERM) and waits for it.
func (s *served) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	<-s.done
	s.cmd.Wait()
}

// servedRun is the part of a run record the benchmark reads.
type servedRun struct {
	RunID          string     `json:"run_id"`
	Status         string     `json:"status"`
	SubmittedAt    time.Time  `json:"submitted_at"`
	FinishedAt     *time.Time `json:"finished_at"`
	RecordsWritten int64      `json:"records_written"`
	Error          *string    `json:"error"`
}

// serveRun submits config to the server and waits for the run to end: its
// time is the server's own, from submission to the terminal record, and its
// CPU that of the server's process tree (the server and its plugins) and of
// the database server meanwhile. It checks that the run completed with rows
// records.
func (b *bench) serveRun(ctx context.Context, s *served, config string, rows int64) (runFigures, error) {
	body, _ := json.Marshal(map[string]string{"config": config})
	base := b.db.children()
	db0 := b.db.cpu(base)
	cpu := startTree(s.cmd.Process.Pid, false)
	var run servedRun
	if err := s.call(ctx, http.MethodPost, "/v1/runs", body, &run); err != nil {
		cpu.stop()
		return runFigures{}, err
	}
	id := run.RunID
	for {
		if err := s.call(ctx, http.MethodGet, "/v1/runs/"+id, nil, &run); err != nil {
			cpu.stop()
			return runFigures{}, err
		}
		if run.FinishedAt != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpu.stop()
	if run.Status != "completed" || run.RecordsWritten != rows {
		return runFigures{}, fmt.Errorf("served run %s ended %s with %d records (want completed with %d), error %v:\n%s",
			id, run.Status, run.RecordsWritten, rows, deref(run.Error), s.log)
	}
	return runFigures{seconds: run.FinishedAt.Sub(run.SubmittedAt).Seconds(), cpu: cpu.cpuSeconds(), cpuBy: cpu.cpuBy(), db: b.db.cpu(base) - db0}, nil
}

// call sends one API request and decodes its JSON answer into out.
func (s *served) call(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	return json.Unmarshal(data, out)
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

// tail keeps the last lines written to it.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 40 {
		t.lines = t.lines[1:]
	}
	t.lines = append(t.lines, line)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
