package dbtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func runFinish(t testing.TB, s db.Store, f db.RunFinal) bool {
	t.Helper()
	won, err := s.RunFinish(t.Context(), f)
	if err != nil {
		t.Fatalf("finish %s: %v", f.Record.RunID, err)
	}
	return won
}

func exerciseRunPath(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("SubmitWritesRecordAndAudit", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := fullRun("r1")
		rec.Status = db.StatusQueued
		e := db.AuditEntry{
			ID: "0190a000-0000-7000-8000-000000000001", Timestamp: now(), Principal: "ops", Role: "operator",
			Action: "run.submit", RunID: ptr("r1"), ConfigFingerprint: ptr("fp"), SourceIP: ptr("10.0.0.1"), Result: "ok",
		}
		if err := s.RunSubmit(t.Context(), rec, &e); err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "submitted run", normalized(rec), get(t, s, "r1"))
		entries, err := s.AuditList(t.Context(), db.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("%d audit entries, want 1", len(entries))
		}
		sameJSON(t, "audit entry", e, entries[0])

		if err := s.RunSubmit(t.Context(), newRun("r2", db.StatusQueued, now()), nil); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, s, "r2", db.StatusQueued)
		if entries, _ := s.AuditList(t.Context(), db.AuditFilter{}); len(entries) != 1 {
			t.Fatalf("a submit without an audit entry wrote one: %d entries", len(entries))
		}
	})

	t.Run("SubmitStampsOwner", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		if err := a.RunSubmit(t.Context(), newRun("r1", db.StatusRunning, now()), nil); err != nil {
			t.Fatal(err)
		}
		done := newRun("r1", db.StatusCompleted, now())
		if finalize(t, b, done) {
			t.Fatal("an instance that did not submit the run finalized it")
		}
		if !finalize(t, a, done) {
			t.Fatal("the submitting instance could not finalize its run")
		}
	})

	t.Run("StartMovesOwnQueuedRun", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		rec := fullRun("r1")
		rec.Status, rec.StartedAt, rec.FinishedAt = db.StatusQueued, nil, nil
		submit(t, a, rec, newRun("done", db.StatusCompleted, now()))
		started := time.Now().Add(-time.Second)
		if ok, err := b.RunStart(t.Context(), "r1", started); err != nil || ok {
			t.Fatalf("another instance started the run: %v, %v", ok, err)
		}
		if ok, err := a.RunStart(t.Context(), "done", started); err != nil || ok {
			t.Fatalf("a finished run was started again: %v, %v", ok, err)
		}
		if ok, err := a.RunStart(t.Context(), "r1", started); err != nil || !ok {
			t.Fatalf("the owner could not start its queued run: %v, %v", ok, err)
		}
		want := normalized(rec)
		want.Status = db.StatusRunning
		want.StartedAt = ptr(started.UTC().Truncate(time.Microsecond))
		got := wantStatus(t, a, "r1", db.StatusRunning)
		sameJSON(t, "started run", want, got)
		wantUTC(t, got)
		if ok, err := a.RunStart(t.Context(), "r1", started); err != nil || ok {
			t.Fatalf("a running run was started twice: %v, %v", ok, err)
		}
	})

	t.Run("FinishWritesTheRunWithLines", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		rec := fullRun("r1")
		running := *rec
		running.Status, running.FinishedAt, running.Invocations = db.StatusRunning, nil, nil
		submit(t, s, &running)
		rec.FinishedAt = nil
		if !runFinish(t, s, db.RunFinal{Record: rec, Lines: logLines(1, 3, now()), Cap: keep(100)}) {
			t.Fatal("an unfenced finish reported a lost fence")
		}
		want := normalized(rec)
		want.FinishedAt = ptr(clk.Now().UTC().Truncate(time.Microsecond))
		sameJSON(t, "finished run", normalized(want), wantStatus(t, s, "r1", db.StatusCompleted))
		if p := logPage(t, s, "r1", 0, 100); len(p.Lines) != 3 || p.Truncated {
			t.Fatalf("lines %v (truncated %v), want 3 untruncated", seqs(p), p.Truncated)
		}
		// A run the store never saw (its record write was lost) still ends
		// up terminal, written whole.
		ghost := fullRun("ghost")
		ghost.Status = db.StatusFailed
		runFinish(t, s, db.RunFinal{Record: ghost})
		sameJSON(t, "a run finished without its submit", normalized(ghost), get(t, s, "ghost"))
	})

	t.Run("FinishAppliesTheLogCap", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("r1", db.StatusRunning, now()))
		appendLogs(t, s, "r1", 6, logLines(1, 4, now()))
		runFinish(t, s, db.RunFinal{Record: newRun("r1", db.StatusCompleted, now()), Lines: logLines(5, 8, now()), Cap: keep(6)})
		if p := logPage(t, s, "r1", 0, 100); fmt.Sprint(seqs(p)) != "[3 4 5 6 7 8]" || !p.Truncated {
			t.Fatalf("lines %v (truncated %v), want the newest 6 and truncated", seqs(p), p.Truncated)
		}
	})

	t.Run("FinishOwnedIsFenced", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		a := member(t, url, clk, "a", shortLease)
		b := member(t, url, clk, "b", liveLease)
		submit(t, a, newRun("r1", db.StatusPending, now()))
		claimPending(t, a, 1)
		lapse(clk)
		wantReport(t, "reclaim", reclaim(t, b, 3), 1, 0)
		late := newRun("r1", db.StatusCompleted, now())
		late.RecordsWritten = 99
		if runFinish(t, a, db.RunFinal{Record: late, Owned: true, Lines: logLines(1, 2, now())}) {
			t.Fatal("the previous owner finished a reclaimed run")
		}
		r := wantStatus(t, b, "r1", db.StatusPending)
		if r.RecordsWritten != 0 || r.Attempt != 1 {
			t.Fatalf("the discarded result reached the record: %+v", r)
		}
		if p := logPage(t, b, "r1", 0, 100); len(p.Lines) != 2 {
			t.Fatalf("the late attempt's lines: %v, want 2 kept", seqs(p))
		}
		claimed := claimPending(t, b, 1)
		if len(claimed) != 1 {
			t.Fatal("the requeued run was not claimable")
		}
		done := claimed[0]
		done.Status = db.StatusCompleted
		if !runFinish(t, b, db.RunFinal{Record: &done, Owned: true}) {
			t.Fatal("the new owner could not finish the run")
		}
		if runFinish(t, b, db.RunFinal{Record: &done, Owned: true}) {
			t.Fatal("a finished run was finished twice")
		}
		if runFinish(t, b, db.RunFinal{Record: newRun("gone", db.StatusCompleted, now()), Owned: true}) {
			t.Fatal("an owned finish wrote a run the store does not have")
		}
		if _, err := b.RunGet(t.Context(), "gone"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("an owned finish of a missing run created it: %v", err)
		}
		if _, err := b.RunFinish(t.Context(), db.RunFinal{Record: newRun("r2", db.StatusRunning, now())}); err == nil {
			t.Fatal("finish accepted a non-terminal status")
		}
	})

	t.Run("ClaimStampsStart", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		pendingRuns(t, s, "p", 1)
		before := now()
		got := claimPending(t, s, 1)
		if len(got) != 1 || got[0].StartedAt == nil || got[0].StartedAt.Before(before) {
			t.Fatalf("claimed run's started_at: %+v, want at or after %v", got, before)
		}
		if r := get(t, s, "p-0000"); r.StartedAt == nil || !r.StartedAt.Equal(*got[0].StartedAt) {
			t.Fatalf("stored started_at %v, claim returned %v", r.StartedAt, got[0].StartedAt)
		}
	})

	t.Run("ShardIsFencedAndAtomic", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		submit(t, a, newRun("r1", db.StatusPending, now()))
		claimPending(t, a, 1)
		specs := shardSpecs("s", 4, ptr(int64(10)))
		if ok, err := b.RunShard(t.Context(), "r1", specs); err != nil || ok {
			t.Fatalf("another instance sharded the run: %v, %v", ok, err)
		}
		if p := progress(t, a, "r1"); p.Total != 0 {
			t.Fatalf("a refused shard call inserted %d shards", p.Total)
		}
		if ok, err := a.RunShard(t.Context(), "r1", specs[:3]); err != nil || !ok {
			t.Fatalf("the owner could not shard its run: %v, %v", ok, err)
		}
		wantStatus(t, b, "r1", db.StatusSharded)
		// A repeat (a retried call) completes the set, keeping what exists.
		if ok, err := a.RunShard(t.Context(), "r1", specs); err != nil || !ok {
			t.Fatalf("repeat: %v, %v", ok, err)
		}
		if p := progress(t, a, "r1"); p.Total != 4 || p.Pending != 4 {
			t.Fatalf("progress %+v, want 4 pending shards", p)
		}
		submit(t, a, newRun("done", db.StatusCompleted, now()))
		if ok, err := a.RunShard(t.Context(), "done", specs); err != nil || ok {
			t.Fatalf("a finished run was sharded: %v, %v", ok, err)
		}
		if p := progress(t, a, "done"); p.Total != 0 {
			t.Fatalf("a refused shard call inserted %d shards", p.Total)
		}
	})

	t.Run("ShardOfACancelledRunEndsCancelled", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("r1", db.StatusPending, now()))
		claimPending(t, s, 1)
		if ok, err := s.RunRequestCancel(t.Context(), "r1"); err != nil || !ok {
			t.Fatalf("request cancel: %v, %v", ok, err)
		}
		if ok, err := s.RunShard(t.Context(), "r1", shardSpecs("s", 3, nil)); err != nil || !ok {
			t.Fatalf("shard: %v, %v", ok, err)
		}
		if p := progress(t, s, "r1"); p.Cancelled != 3 {
			t.Fatalf("progress %+v, want 3 cancelled shards", p)
		}
		if got := shardClaim(t, s, 10); len(got) != 0 {
			t.Fatalf("claimed %v of a cancelled run", shardKeys(got))
		}
		ids, err := s.ShardFinalizeCompletedParents(t.Context())
		if err != nil || len(ids) != 1 {
			t.Fatalf("sweep: %v, %v", ids, err)
		}
		wantStatus(t, s, "r1", db.StatusCancelled)
	})

	t.Run("ReleaseHandsOwnRunsBack", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		submit(t, a, newRun("r1", db.StatusPending, now()), newRun("done", db.StatusCompleted, now()))
		claimPending(t, a, 1)
		if ok, err := b.RunRelease(t.Context(), "r1"); err != nil || ok {
			t.Fatalf("another instance released the run: %v, %v", ok, err)
		}
		if ok, err := a.RunRelease(t.Context(), "done"); err != nil || ok {
			t.Fatalf("a finished run was released: %v, %v", ok, err)
		}
		if ok, err := a.RunRelease(t.Context(), "r1"); err != nil || !ok {
			t.Fatalf("the owner could not release its run: %v, %v", ok, err)
		}
		if r := wantStatus(t, b, "r1", db.StatusPending); r.Attempt != 1 {
			t.Fatalf("released run: attempt %d, want 1", r.Attempt)
		}
		if got := claimPending(t, b, 1); len(got) != 1 || got[0].Attempt != 1 {
			t.Fatalf("a peer could not claim the released run: %+v", got)
		}
		if done := newRun("r1", db.StatusCompleted, now()); finalize(t, a, done) {
			t.Fatal("the instance that released the run finalized it")
		}

		submit(t, a, newRun("p", db.StatusPending, now()))
		claimPending(t, a, 1)
		if ok, err := a.RunShard(t.Context(), "p", shardSpecs("s", 2, nil)); err != nil || !ok {
			t.Fatalf("shard: %v, %v", ok, err)
		}
		sh := shardClaim(t, a, 1)
		if len(sh) != 1 {
			t.Fatal("no shard claimed")
		}
		if ok, err := b.ShardRelease(t.Context(), "p", sh[0].ShardID); err != nil || ok {
			t.Fatalf("another instance released the shard: %v, %v", ok, err)
		}
		if ok, err := a.ShardRelease(t.Context(), "p", sh[0].ShardID); err != nil || !ok {
			t.Fatalf("the owner could not release its shard: %v, %v", ok, err)
		}
		if p := progress(t, b, "p"); p.Pending != 2 || p.Running != 0 {
			t.Fatalf("progress after release %+v, want 2 pending", p)
		}
		again := shardClaim(t, b, 2)
		attempts := map[string]int{}
		for _, c := range again {
			attempts[c.ShardID] = c.Attempt
		}
		if attempts[sh[0].ShardID] != 1 {
			t.Fatalf("released shard claimed with attempt %d, want 1", attempts[sh[0].ShardID])
		}
		if finishShard(t, a, "p", sh[0].ShardID, db.ShardResult{Status: db.ShardCompleted}) {
			t.Fatal("the instance that released the shard finalized it")
		}
	})

	t.Run("SetProgressOnlyOwnRunningRuns", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		submit(t, a, newRun("mine", db.StatusRunning, now()), newRun("done", db.StatusCompleted, now()))
		submit(t, b, newRun("theirs", db.StatusRunning, now()))
		n, err := a.RunSetProgress(t.Context(), map[string]int64{"mine": 42, "done": 7, "theirs": 9, "missing": 1})
		if err != nil || n != 1 {
			t.Fatalf("set progress: %d, %v; want 1", n, err)
		}
		if r := get(t, a, "mine"); r.RecordsWritten != 42 {
			t.Fatalf("records_written %d, want 42", r.RecordsWritten)
		}
		for _, id := range []string{"done", "theirs"} {
			if r := get(t, a, id); r.RecordsWritten != 0 {
				t.Fatalf("run %s took progress it does not own: %d", id, r.RecordsWritten)
			}
		}
	})
}
