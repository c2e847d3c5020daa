package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// Environment of a child process (see TestMain).
const (
	claimerURLEnv      = "FAUCET_SQLITE_TEST_CLAIMER_URL"
	claimerInstanceEnv = "FAUCET_SQLITE_TEST_CLAIMER_INSTANCE"
	openerURLEnv       = "FAUCET_SQLITE_TEST_OPENER_URL"
)

// TestMain lets the test binary double as a child process, so tests can run
// real, separate processes against one file: a claimer, or an opener that
// reports what Open says.
func TestMain(m *testing.M) {
	if url := os.Getenv(claimerURLEnv); url != "" {
		if err := claimUntilEmpty(url, os.Getenv(claimerInstanceEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "claimer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if url := os.Getenv(openerURLEnv); url != "" {
		s, err := db.Open(context.Background(), url, db.Options{})
		if err != nil {
			fmt.Printf("%s\n%v\n", db.TransienceOf(err), err)
			os.Exit(0)
		}
		_ = s.Close()
		fmt.Println("opened")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// claimUntilEmpty opens url as instance, waits for a line on stdin (so every
// claimer starts together), claims pending runs in small batches until none
// is left and prints the id of every run it claimed.
func claimUntilEmpty(url, instance string) error {
	ctx := context.Background()
	s, err := db.Open(ctx, url, db.Options{InstanceID: instance})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("wait for the start signal: %w", err)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		runs, err := s.RunClaimPending(ctx, 7)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return nil
		}
		for _, r := range runs {
			if r.Status != db.StatusRunning {
				return fmt.Errorf("claimed run %s is %s", r.RunID, r.Status)
			}
			fmt.Fprintln(out, r.RunID)
		}
	}
}

// Three processes claim 600 pending runs from one file at once: SQLite's file
// lock is all that stands between them, and every run must go to exactly one.
func TestClaimPendingAcrossProcesses(t *testing.T) {
	const runs, procs = 600, 3
	url := newURL(t)
	seed, err := db.Open(t.Context(), url, db.Options{InstanceID: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	base := time.Now().Add(-time.Hour)
	for i := range runs {
		rec := &db.RunRecord{RunID: fmt.Sprintf("run-%04d", i), Status: db.StatusPending, SubmittedAt: base.Add(time.Duration(i) * time.Millisecond)}
		if err := seed.RunSubmit(t.Context(), rec, nil); err != nil {
			t.Fatal(err)
		}
	}

	type child struct {
		cmd    *exec.Cmd
		stdout bytes.Buffer
		stderr bytes.Buffer
		start  func() error
	}
	children := make([]*child, procs)
	for i := range children {
		c := &child{cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")}
		c.cmd.Env = append(os.Environ(), claimerURLEnv+"="+url, fmt.Sprintf("%s=proc-%d", claimerInstanceEnv, i))
		c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
		stdin, err := c.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.start = func() error {
			_, err := stdin.Write([]byte("go\n"))
			return errors.Join(err, stdin.Close())
		}
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(func() {
			if err := c.start(); err != nil {
				t.Errorf("start claimer: %v", err)
			}
		})
	}
	wg.Wait()

	owner := map[string]string{}
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("claimer %d: %v\n%s", i, err, c.stderr.String())
		}
		instance := fmt.Sprintf("proc-%d", i)
		for _, id := range strings.Fields(c.stdout.String()) {
			if prev, dup := owner[id]; dup {
				t.Fatalf("run %s claimed by %s and %s", id, prev, instance)
			}
			owner[id] = instance
		}
	}
	if len(owner) != runs {
		t.Fatalf("%d runs claimed, want %d", len(owner), runs)
	}

	// The database agrees: each run is running and owned by its claimer, as
	// the lease renewal of each claimer's instance id counts.
	perOwner := map[string]int{}
	for _, inst := range owner {
		perOwner[inst]++
	}
	t.Logf("claims per process: %v", perOwner)
	for i := range procs {
		instance := fmt.Sprintf("proc-%d", i)
		s, err := db.Open(t.Context(), url, db.Options{InstanceID: instance})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := s.RunRenewLeases(t.Context())
		_ = s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != perOwner[instance] {
			t.Errorf("%s owns %d runs in the database, reported %d", instance, len(ids), perOwner[instance])
		}
	}
	page, err := seed.RunList(t.Context(), db.ListFilter{Statuses: []db.RunStatus{db.StatusPending}})
	if err != nil || len(page.Runs) != 0 {
		t.Fatalf("pending runs left: %d (%v)", len(page.Runs), err)
	}
}
