package maintenance_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/server/admission"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/maintenance"
	st "github.com/faucet-dev/faucet/server/servicetest"
)

func TestPurgeTakesExpiredHistoryButNotUnfinishedRuns(t *testing.T) {
	t.Parallel()
	clock := &st.Clock{}
	s := st.Start(t, st.Options{Exec: execution.Config{MaxConcurrent: 1}, Store: db.Options{Clock: clock.Now}})
	ctx := context.Background()
	done, err := s.Admission.Submit(ctx, admission.Request{Config: "4", ConfigFormat: "yaml", IdempotencyKey: st.Ptr("daily")})
	if err != nil {
		t.Fatal(err)
	}
	st.Await(t, s.Store, done.RunID, db.StatusCompleted)
	running := s.Submit(t, "hold")
	st.Await(t, s.Store, running.RunID, db.StatusRunning)
	queued := s.Submit(t, "hold")
	// The running run's opening lines reach the store before the purge may
	// take them.
	st.AwaitLogLines(t, s.Store, running.RunID, func(n int) bool { return n > 0 })
	st.AwaitLogLines(t, s.Store, done.RunID, func(n int) bool { return n > 0 })

	// A second on, for the store, everything written so far is past a
	// retention of keep; the leases of the unfinished runs still hold.
	const keep = 50 * time.Millisecond
	clock.Advance(time.Second)
	p := maintenance.NewPurger(maintenance.Config{
		Retention:  maintenance.Retention{TerminalRuns: keep, IdempotencyClaims: keep, Logs: keep},
		PurgeEvery: 10 * time.Millisecond,
	}, s.Store)
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	testwait.Until(t, 30*time.Second, func() error {
		if _, err := s.Store.RunGet(ctx, done.RunID); !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("the finished run outlived its retention: %v", err)
		}
		return nil
	})
	st.AwaitLogLines(t, s.Store, done.RunID, func(n int) bool { return n == 0 })
	st.AwaitLogLines(t, s.Store, running.RunID, func(n int) bool { return n == 0 })
	// The claim is gone: the key takes a different payload as a fresh claim.
	claim, err := s.Store.IdempotencyClaim(ctx, "daily", "another-fingerprint", "another-run", 0)
	if err != nil || claim.Outcome != db.ClaimFresh {
		t.Fatalf("claim of the purged key: %+v %v, want fresh", claim, err)
	}
	for id, want := range map[string]db.RunStatus{running.RunID: db.StatusRunning, queued.RunID: db.StatusQueued} {
		if rec, err := s.Store.RunGet(ctx, id); err != nil || rec.Status != want {
			t.Fatalf("unfinished run %s after the purge: %+v %v, want %s", id, rec, err, want)
		}
	}
	// Stopped first, so the purge does not take the runs as they finish.
	p.Stop()
	for _, id := range []string{queued.RunID, running.RunID} {
		if _, err := s.Exec.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		st.Await(t, s.Store, id, db.StatusCancelled)
	}
}

// TestRecoverFailsTheRunsACrashLeft: a server that holds its history alone
// fails every unfinished run at start; one that shares it, only those whose
// lease lapsed.
func TestRecoverFailsTheRunsACrashLeft(t *testing.T) {
	t.Parallel()
	clock := &st.Clock{}
	url := st.History(t)
	crashed, err := db.Open(context.Background(), url, db.Options{Clock: clock.Now, LeaseTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	now := clock.Now().UTC()
	for _, id := range []string{"lapsed", "live"} {
		if err := crashed.RunSubmit(context.Background(), &db.RunRecord{RunID: id, Status: db.StatusRunning, SubmittedAt: now, StartedAt: &now}, nil); err != nil {
			t.Fatal(err)
		}
		if id == "lapsed" {
			clock.Advance(2 * time.Minute)
		}
	}
	next, err := db.Open(context.Background(), url, db.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if n, err := maintenance.Recover(context.Background(), next, false, nil, nil); err != nil || n != 1 {
		t.Fatalf("shared recovery failed %d runs (%v), want the lapsed one", n, err)
	}
	if rec, _ := next.RunGet(context.Background(), "live"); rec.Status != db.StatusRunning {
		t.Fatalf("a shared recovery failed a run with a live lease: %+v", rec)
	}
	if n, err := maintenance.Recover(context.Background(), next, true, nil, nil); err != nil || n != 1 {
		t.Fatalf("exclusive recovery failed %d runs (%v), want the live one too", n, err)
	}
	if rec, _ := next.RunGet(context.Background(), "live"); rec.Status != db.StatusFailed || rec.Error == nil || *rec.Error != maintenance.MsgRecovered {
		t.Fatalf("after exclusive recovery: %+v", rec)
	}
}
