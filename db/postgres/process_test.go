package postgres_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// Environment of a claimer child process (see TestMain).
const (
	envClaimerURL = "FAUCET_TEST_CLAIMER_URL"
	envClaimerID  = "FAUCET_TEST_CLAIMER_ID"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envClaimerURL); url != "" {
		os.Exit(claimer(url, os.Getenv(envClaimerID)))
	}
	os.Exit(m.Run())
}

// claimer is the body of a child process: it waits for the go signal on
// stdin, claims pending runs in batches until none are left, and prints the
// id of every run it claimed.
func claimer(url, instanceID string) int {
	ctx := context.Background()
	s, err := db.Open(ctx, url, db.Options{InstanceID: instanceID})
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimer:", err)
		return 1
	}
	defer s.Close()
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "claimer: wait for start:", err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		runs, err := s.RunClaimPending(ctx, 16)
		if err != nil {
			fmt.Fprintln(os.Stderr, "claimer:", err)
			return 1
		}
		if len(runs) == 0 {
			return 0
		}
		for _, r := range runs {
			fmt.Fprintln(out, r.RunID)
		}
	}
}

// TestClaimPendingAcrossProcesses runs three claimer processes against one
// database: every pending run is claimed by exactly one of them.
func TestClaimPendingAcrossProcesses(t *testing.T) {
	url := testpg.Database(t)
	s, err := db.Open(t.Context(), url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const total = 1000
	base := time.Now().Add(-time.Hour)
	for i := range total {
		rec := &db.RunRecord{RunID: fmt.Sprintf("run-%04d", i), Status: db.StatusPending, SubmittedAt: base.Add(time.Duration(i) * time.Millisecond)}
		if err := s.RunSubmit(t.Context(), rec, nil); err != nil {
			t.Fatal(err)
		}
	}

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout strings.Builder
	}
	children := make([]*child, 3)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0])}
		c.cmd.Env = append(os.Environ(), envClaimerURL+"="+url, fmt.Sprintf("%s=proc-%d", envClaimerID, i))
		c.cmd.Stdout = &c.stdout
		c.cmd.Stderr = os.Stderr
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		c.stdin.Close()
	}
	claimedBy := map[string]int{}
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("claimer %d: %v", i, err)
		}
		for _, runID := range strings.Fields(c.stdout.String()) {
			if prev, dup := claimedBy[runID]; dup {
				t.Fatalf("run %s claimed by processes %d and %d", runID, prev, i)
			}
			claimedBy[runID] = i
		}
	}
	if len(claimedBy) != total {
		t.Fatalf("%d runs claimed, want %d", len(claimedBy), total)
	}
	if left, err := s.RunClaimPending(t.Context(), 16); err != nil || len(left) != 0 {
		t.Fatalf("runs left pending: %d, %v", len(left), err)
	}
}
