package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

func TestSIGTERMFinalizesEveryRun(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		dataDir, hist := t.TempDir(), h.url(t)
		const grace = 5 * time.Second
		s := start(t, serverOpts{history: hist, dataDir: dataDir, args: []string{"--max-concurrent-runs", "2", "--shutdown-grace-secs", "5"}})
		var ids []string
		for i := range 4 {
			id := s.submit(client.SubmitRequest{Config: holding(2, filepath.Join(t.TempDir(), "out.jsonl"))}).RunId
			ids = append(ids, id)
			if i < 2 {
				s.await(id, client.RunStatusRunning)
			}
		}
		for _, id := range ids[2:] {
			if st := s.get(id).Status; st != client.RunStatusQueued {
				t.Fatalf("run %s is %s, want queued", id, st)
			}
		}
		began := time.Now()
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.exited:
		case <-time.After(grace + 10*time.Second):
			t.Fatalf("faucet serve did not exit within its %s grace\n%s", grace, s.stderr.String())
		}
		if s.waitErr != nil {
			t.Fatalf("faucet serve exited with %v\n%s", s.waitErr, s.stderr.String())
		}
		t.Logf("exited %s after SIGTERM", time.Since(began).Round(time.Millisecond))

		// Every run is terminal in the database, as a new server reads it.
		s2 := start(t, serverOpts{history: hist, dataDir: dataDir})
		for _, id := range ids {
			rec := s2.get(id)
			if rec.Status != client.RunStatusFailed || rec.Error == nil || !strings.Contains(*rec.Error, "shutdown") || rec.FinishedAt == nil {
				t.Fatalf("run %s after shutdown = %s %s", id, rec.Status, deref(rec.Error))
			}
		}
	})
}

func TestKill9ThenRestartRecoversInterruptedRuns(t *testing.T) {
	dataDir := t.TempDir()
	s := start(t, serverOpts{dataDir: dataDir, args: []string{"--max-concurrent-runs", "1"}})
	out := filepath.Join(t.TempDir(), "done.jsonl")
	done := s.submit(client.SubmitRequest{Config: generateToFile(10, out)}).RunId
	s.await(done, client.RunStatusCompleted)
	running := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "a.jsonl"))}).RunId
	s.await(running, client.RunStatusRunning)
	queued := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "b.jsonl"))}).RunId

	children := childPIDs(s.cmd.Process.Pid)
	if len(children) == 0 {
		t.Fatal("no plugin processes found under the server")
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	// The plugin processes die with the server: no orphans.
	for _, pid := range children {
		testwait.Until(t, 30*time.Second, func() error {
			if alive(pid) {
				return fmt.Errorf("plugin process %d outlived the killed server", pid)
			}
			return nil
		})
	}

	s2 := start(t, serverOpts{dataDir: dataDir})
	if rec := s2.get(done); rec.Status != client.RunStatusCompleted || rec.RecordsWritten != 10 {
		t.Fatalf("finished run after the crash = %+v", rec)
	}
	for _, id := range []string{running, queued} {
		rec := s2.get(id)
		if rec.Status != client.RunStatusFailed || rec.Error == nil || !strings.Contains(*rec.Error, "stopped before the run finished") {
			t.Fatalf("interrupted run %s = %s %s", id, rec.Status, deref(rec.Error))
		}
	}
	// The history keeps working after recovery.
	again := s2.submit(client.SubmitRequest{Config: generateToFile(3, out)}).RunId
	if rec := s2.await(again, client.RunStatusCompleted); rec.RecordsWritten != 3 {
		t.Fatalf("run after recovery = %+v", rec)
	}
}

// childPIDs lists the live processes whose parent is pid.
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fields := statFields(child); len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// statFields returns the fields of /proc/PID/stat after the parenthesised
// command (state, ppid, …; field n of proc(5) is at index n-3), or nil when
// the process is gone.
func statFields(pid int) []string {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
}

// alive reports whether pid runs (a zombie has exited).
func alive(pid int) bool {
	fields := statFields(pid)
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
