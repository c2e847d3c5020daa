package dbtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

const (
	// shortLease is the lease of a member the test lets die: the test
	// moves its clock past it (lapse).
	shortLease = time.Second
	// liveLease is the lease of a member that stays alive: the test never
	// moves its clock that far.
	liveLease = 10 * time.Minute
)

// lapse moves clk past a shortLease granted at its current time.
func lapse(clk *clock) { clk.Advance(shortLease + time.Microsecond) }

// member opens a store of instance on url with a lease, on clk.
func member(t testing.TB, url string, clk *clock, instance string, lease time.Duration) db.Store {
	t.Helper()
	return open(t, url, db.Options{InstanceID: instance, LeaseTTL: lease, Clock: clk.Now})
}

func claimPending(t testing.TB, s db.Store, limit int) []db.RunRecord {
	t.Helper()
	runs, err := s.RunClaimPending(t.Context(), limit)
	if err != nil {
		t.Fatalf("claim pending: %v", err)
	}
	return runs
}

func reclaim(t testing.TB, s db.Store, maxAttempts int) db.ReclaimReport {
	t.Helper()
	rep, err := s.RunRequeueLapsed(t.Context(), maxAttempts)
	if err != nil {
		t.Fatalf("requeue lapsed: %v", err)
	}
	return rep
}

// finalize is the owner-fenced finish of rec (no log lines).
func finalize(t testing.TB, s db.Store, rec *db.RunRecord) bool {
	t.Helper()
	return runFinish(t, s, db.RunFinal{Record: rec, Owned: true})
}

func wantReport(t testing.TB, what string, got db.ReclaimReport, requeued, poisoned int) {
	t.Helper()
	if got.Requeued != requeued || got.Poisoned != poisoned {
		t.Fatalf("%s: requeued %d, poisoned %d; want %d and %d", what, got.Requeued, got.Poisoned, requeued, poisoned)
	}
}

// pendingRuns writes n pending runs submitted a millisecond apart.
func pendingRuns(t testing.TB, s db.Store, prefix string, n int) []*db.RunRecord {
	t.Helper()
	base := now().Add(-time.Hour)
	recs := make([]*db.RunRecord, n)
	for i := range n {
		recs[i] = newRun(id(prefix, i), db.StatusPending, base.Add(time.Duration(i)*time.Millisecond))
		recs[i].ConfigBody = ptr("version: 1")
	}
	submit(t, s, recs...)
	return recs
}

func exerciseLeases(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("RenewReportsOwnNonTerminalRuns", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		for _, st := range db.AllStatuses {
			submit(t, a, newRun("a-"+string(st), st, now()))
		}
		submit(t, b, newRun("b-running", db.StatusRunning, now()))
		ids, err := a.RunRenewLeases(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "renewed runs", []string{"a-pending", "a-queued", "a-running", "a-sharded"}, ids)
		c := open(t, url, db.Options{InstanceID: "c"})
		if ids, err := c.RunRenewLeases(t.Context()); err != nil || len(ids) != 0 {
			t.Fatalf("an instance owning nothing renewed %v (%v)", ids, err)
		}
	})

	t.Run("FailLapsedFailsOnlyLapsedLeases", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		live := member(t, url, clk, "live", liveLease)
		started := clk.Now().UTC().Truncate(time.Microsecond).Add(-time.Minute)
		queued := newRun("queued", db.StatusQueued, now())
		running := newRun("running", db.StatusRunning, now())
		running.StartedAt = &started
		done := newRun("done", db.StatusCompleted, now())
		done.FinishedAt = ptr(now())
		pending := newRun("pending", db.StatusPending, now())
		submit(t, dying, queued, running, done, pending)
		lapse(clk)
		submit(t, live, newRun("peer", db.StatusRunning, now()))

		n, err := live.RunFailLapsed(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("failed %d runs, want 2 (queued and running)", n)
		}
		for _, id := range []string{"queued", "running"} {
			r := wantStatus(t, live, id, db.StatusFailed)
			wantError(t, "run "+id, r.Error, "the instance that owned this run stopped renewing its lease before the run finished")
			if r.FinishedAt == nil || !r.FinishedAt.Equal(clk.Now().Truncate(time.Microsecond)) {
				t.Errorf("failed run %s: finished_at %v, want the clock's %v", id, r.FinishedAt, clk.Now())
			}
		}
		r := get(t, live, "running")
		if want := clk.Now().Truncate(time.Microsecond).Sub(started).Seconds(); r.ElapsedSecs == nil || *r.ElapsedSecs != want {
			t.Errorf("failed run that had started: elapsed_secs %v, want %v", r.ElapsedSecs, want)
		}
		wantStatus(t, live, "done", db.StatusCompleted)
		wantStatus(t, live, "pending", db.StatusPending)
		wantStatus(t, live, "peer", db.StatusRunning)
		if n, err := live.RunFailLapsed(t.Context()); err != nil || n != 0 {
			t.Fatalf("second pass: %d, %v; want 0", n, err)
		}
	})

	t.Run("FailUnfinishedFailsEveryUnfinishedRun", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		a := member(t, url, clk, "a", liveLease)
		b := member(t, url, clk, "b", liveLease)
		started := clk.Now().Add(-time.Minute)
		running := newRun("running", db.StatusRunning, now())
		running.StartedAt = &started
		submit(t, a, newRun("queued", db.StatusQueued, now()), running, newRun("pending", db.StatusPending, now()),
			newRun("sharded", db.StatusSharded, now()), newRun("done", db.StatusCompleted, now()))
		submit(t, b, newRun("peer", db.StatusRunning, now()))
		ids, err := a.RunFailUnfinished(t.Context(), "stopped before the run finished")
		if err != nil {
			t.Fatal(err)
		}
		// Live leases or not, and whoever owns them.
		equalIDs(t, "failed runs", []string{"peer", "queued", "running"}, ids)
		for _, id := range ids {
			r := wantStatus(t, a, id, db.StatusFailed)
			wantError(t, "run "+id, r.Error, "stopped before the run finished")
			if r.FinishedAt == nil || !r.FinishedAt.Equal(clk.Now().Truncate(time.Microsecond)) {
				t.Errorf("failed run %s: finished_at %v, want the clock's %v", id, r.FinishedAt, clk.Now())
			}
		}
		if r := get(t, a, "running"); r.ElapsedSecs == nil || *r.ElapsedSecs < 60 {
			t.Errorf("failed run that had started: elapsed_secs %v, want >= 60", deref(r.ElapsedSecs))
		}
		for id, st := range map[string]db.RunStatus{"pending": db.StatusPending, "sharded": db.StatusSharded, "done": db.StatusCompleted} {
			wantStatus(t, a, id, st)
		}
		if ids, err := a.RunFailUnfinished(t.Context(), "again"); err != nil || len(ids) != 0 {
			t.Fatalf("second pass: %v, %v; want none", ids, err)
		}
	})

	t.Run("RenewalPreventsRequeueAndFailure", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		// Two stores of one instance "a": one grants short leases, one long.
		aShort := member(t, url, clk, "a", shortLease)
		aLong := member(t, url, clk, "a", liveLease)
		b := member(t, url, clk, "b", liveLease)
		submit(t, aShort, newRun("r1", db.StatusRunning, now()), newRun("q1", db.StatusQueued, now()))
		lapse(clk)
		// The leases lapsed; a renewal makes them live again.
		if ids, err := aLong.RunRenewLeases(t.Context()); err != nil || len(ids) != 2 {
			t.Fatalf("renew: %v, %v; want q1 and r1", ids, err)
		}
		wantReport(t, "requeue after renewal", reclaim(t, b, 3), 0, 0)
		if n, err := b.RunFailLapsed(t.Context()); err != nil || n != 0 {
			t.Fatalf("fail lapsed after renewal: %d, %v; want 0", n, err)
		}
		wantStatus(t, b, "r1", db.StatusRunning)
		// A renewal is what keeps them: once the last one grants a short
		// lease and it lapses, the run is requeued.
		if ids, err := aShort.RunRenewLeases(t.Context()); err != nil || len(ids) != 2 {
			t.Fatalf("short renew: %v, %v; want q1 and r1", ids, err)
		}
		lapse(clk)
		wantReport(t, "requeue once the renewed lease lapsed", reclaim(t, b, 3), 1, 0)
	})

	t.Run("ALeaseLapsesAfterItsExpiry", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		submit(t, dying, newRun("r1", db.StatusRunning, now()))
		clk.Advance(shortLease)
		// At its expiry instant the lease still holds.
		wantReport(t, "requeue at the expiry", reclaim(t, peer, 3), 0, 0)
		clk.Advance(time.Microsecond)
		wantReport(t, "requeue just past the expiry", reclaim(t, peer, 3), 1, 0)
	})
}

func exerciseClaimPending(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("OldestFirst", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		recs := pendingRuns(t, s, "p", 5)
		// A tie on submitted_at is broken by run id.
		tie := newRun("p-0001a", db.StatusPending, recs[1].SubmittedAt)
		submit(t, s, tie)
		submit(t, s, newRun("queued", db.StatusQueued, recs[0].SubmittedAt.Add(-time.Hour)))
		submit(t, s, newRun("running", db.StatusRunning, recs[0].SubmittedAt.Add(-time.Hour)))

		got := claimPending(t, s, 3)
		equalIDs(t, "first claim", []string{"p-0000", "p-0001", "p-0001a"}, runIDs(got))
		for _, r := range got {
			if r.Status != db.StatusRunning {
				t.Errorf("claimed run %s has status %s, want running", r.RunID, r.Status)
			}
			wantStatus(t, s, r.RunID, db.StatusRunning)
		}
		if got[0].ConfigBody == nil || *got[0].ConfigBody != "version: 1" {
			t.Errorf("claimed run lost its config body: %v", got[0].ConfigBody)
		}
		equalIDs(t, "second claim", []string{"p-0002", "p-0003", "p-0004"}, runIDs(claimPending(t, s, 10)))
		if got := claimPending(t, s, 10); len(got) != 0 {
			t.Fatalf("claimed %v with nothing pending", runIDs(got))
		}
		wantStatus(t, s, "queued", db.StatusQueued)
		if got := claimPending(t, s, 0); len(got) != 0 {
			t.Fatalf("a zero limit claimed %d runs", len(got))
		}
	})

	t.Run("ClaimerOwnsTheRun", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		pendingRuns(t, a, "p", 1)
		got := claimPending(t, b, 1)
		if len(got) != 1 {
			t.Fatalf("claimed %d runs, want 1", len(got))
		}
		done := got[0]
		done.Status = db.StatusCompleted
		if finalize(t, a, &done) {
			t.Fatal("the submitter finalized a run another instance claimed")
		}
		if !finalize(t, b, &done) {
			t.Fatal("the claimer could not finalize its run")
		}
	})

	t.Run("ConcurrentClaimersAcrossStores", func(t *testing.T) {
		t.Parallel()
		ss := stores(t, newURL(t), "a", "b", "c")
		const total = 1000
		pendingRuns(t, ss[0], "p", total)
		drainConcurrently(t, 9, total, func(w int) ([]string, error) {
			runs, err := ss[w%3].RunClaimPending(t.Context(), 16)
			return runIDs(runs), err
		})
		if got := claimPending(t, ss[0], 16); len(got) != 0 {
			t.Fatalf("%d runs still pending", len(got))
		}
		running := listAll(t, ss[1], db.ListFilter{Statuses: []db.RunStatus{db.StatusRunning}, Limit: 500})
		if len(running) != total {
			t.Fatalf("%d runs running, want %d", len(running), total)
		}
	})
}

func exerciseReclaim(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("RequeuesLapsedRunning", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		pendingRuns(t, peer, "p", 1)
		claimed := claimPending(t, dying, 1)
		if len(claimed) != 1 {
			t.Fatal("nothing claimed")
		}
		submit(t, dying, newRun("queued", db.StatusQueued, now()))
		lapse(clk)
		submit(t, peer, newRun("live", db.StatusRunning, now()))

		wantReport(t, "requeue", reclaim(t, peer, 3), 1, 0)
		r := wantStatus(t, peer, "p-0000", db.StatusPending)
		if r.Attempt != 1 {
			t.Fatalf("requeued run: attempt %d, want 1", r.Attempt)
		}
		wantStatus(t, peer, "queued", db.StatusQueued)
		wantStatus(t, peer, "live", db.StatusRunning)
		wantReport(t, "second requeue", reclaim(t, peer, 3), 0, 0)

		// The old owner's late result is discarded; the run is claimable again.
		late := claimed[0]
		late.Status = db.StatusCompleted
		if finalize(t, dying, &late) {
			t.Fatal("the owner whose lease lapsed finalized a requeued run")
		}
		again := claimPending(t, peer, 1)
		if len(again) != 1 || again[0].RunID != "p-0000" || again[0].Attempt != 1 {
			t.Fatalf("requeued run claimed again: %+v", again)
		}
	})

	t.Run("CancelRequestSurvivesRequeue", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		pendingRuns(t, peer, "p", 1)
		claimPending(t, dying, 1)
		if ok, err := peer.RunRequestCancel(t.Context(), "p-0000"); err != nil || !ok {
			t.Fatalf("request cancel: %v, %v", ok, err)
		}
		lapse(clk)
		wantReport(t, "requeue", reclaim(t, peer, 3), 1, 0)
		claimPending(t, peer, 1)
		ids, err := peer.RunPendingCancellations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "cancellations of the new owner", []string{"p-0000"}, ids)
	})

	t.Run("PoisonAtTheCap", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		const maxAttempts = 2
		pendingRuns(t, peer, "p", 1)
		for attempt := range maxAttempts + 1 {
			got := claimPending(t, dying, 1)
			if len(got) != 1 || got[0].Attempt != attempt {
				t.Fatalf("claim %d: %+v", attempt, got)
			}
			lapse(clk)
			rep := reclaim(t, peer, maxAttempts)
			if attempt < maxAttempts {
				wantReport(t, fmt.Sprintf("requeue after attempt %d", attempt), rep, 1, 0)
				continue
			}
			wantReport(t, "requeue at the cap", rep, 0, 1)
		}
		r := wantStatus(t, peer, "p-0000", db.StatusFailed)
		// Three executions (attempts 0, 1, 2), each lease lapsed, two requeues.
		wantError(t, "poisoned run", r.Error, "poison run: its owner's lease lapsed during attempt 3 (requeue count 2, cap 2); not retried")
		if r.FinishedAt == nil || !r.FinishedAt.Equal(clk.Now().Truncate(time.Microsecond)) {
			t.Fatalf("poisoned run: finished_at %v, want the clock's %v", r.FinishedAt, clk.Now())
		}
		if r.Attempt != maxAttempts {
			t.Fatalf("poisoned run: attempt %d, want %d", r.Attempt, maxAttempts)
		}
		wantReport(t, "requeue after poisoning", reclaim(t, peer, maxAttempts), 0, 0)
	})

	// A hand-over by RunRelease counts as a requeue too, and may carry a run
	// past the cap: the poison text counts what happened to that row.
	t.Run("PoisonTextCountsAHandOver", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		const maxAttempts = 1
		pendingRuns(t, peer, "p", 1)
		claimPending(t, dying, 1)
		lapse(clk)
		wantReport(t, "requeue below the cap", reclaim(t, peer, maxAttempts), 1, 0)
		claimPending(t, dying, 1)
		if ok, err := dying.RunRelease(t.Context(), "p-0000"); err != nil || !ok {
			t.Fatalf("release at the cap: %v, %v", ok, err)
		}
		if got := claimPending(t, dying, 1); len(got) != 1 || got[0].Attempt != 2 {
			t.Fatalf("claim after the hand-over: %+v, want attempt 2", got)
		}
		lapse(clk)
		wantReport(t, "requeue past the cap", reclaim(t, peer, maxAttempts), 0, 1)
		r := wantStatus(t, peer, "p-0000", db.StatusFailed)
		wantError(t, "poisoned run", r.Error, "poison run: its owner's lease lapsed during attempt 3 (requeue count 2, cap 1); not retried")
	})

	t.Run("ConcurrentReclaimersCountEachRunOnce", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peers := []db.Store{member(t, url, clk, "a", liveLease), member(t, url, clk, "b", liveLease), member(t, url, clk, "c", liveLease)}
		const n = 60
		// Runs with attempt 1 are poisoned with a cap of 1, the rest requeued.
		base := now().Add(-time.Hour)
		for i := range n {
			r := newRun(id("p", i), db.StatusPending, base.Add(time.Duration(i)*time.Millisecond))
			if i < n/3 {
				r.Attempt = 1
			}
			submit(t, dying, r)
		}
		if got := claimPending(t, dying, n); len(got) != n {
			t.Fatalf("claimed %d runs, want %d", len(got), n)
		}
		lapse(clk)
		reps := concurrently(t, len(peers), func(i int) (db.ReclaimReport, error) {
			return peers[i].RunRequeueLapsed(t.Context(), 1)
		})
		var sum db.ReclaimReport
		for _, rep := range reps {
			sum.Requeued += rep.Requeued
			sum.Poisoned += rep.Poisoned
		}
		wantReport(t, "sum over concurrent reclaimers", sum, n-n/3, n/3)
	})
}

func exerciseFinalize(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("WritesTheTerminalStateAndStampsFinishedAt", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		rec := fullRun("r1")
		rec.Status, rec.FinishedAt, rec.Error, rec.RecordsWritten, rec.Invocations = db.StatusRunning, nil, nil, 0, nil
		submit(t, s, rec)
		done := *rec
		done.Status, done.RecordsWritten, done.Error = db.StatusFailed, 99, ptr("boom")
		done.Invocations = []db.InvocationRecord{{RowID: "row-1", RecordsWritten: 99, DurationMS: 12, Error: ptr("boom")}}
		// What a run was submitted with is not the finish's to change.
		changed := done
		changed.Name, changed.Labels, changed.ConfigBody, changed.Attempt = ptr("renamed"), map[string]string{"x": "y"}, ptr("other"), 7
		if !finalize(t, s, &changed) {
			t.Fatal("the owner could not finalize its run")
		}
		if changed.FinishedAt != nil {
			t.Fatal("finalize modified the caller's record")
		}
		want := normalized(&done)
		want.FinishedAt = ptr(clk.Now().UTC().Truncate(time.Microsecond))
		sameJSON(t, "finalized record", normalized(want), get(t, s, "r1"))
	})

	t.Run("FirstFinalizerWins", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := newRun("r1", db.StatusRunning, now())
		submit(t, s, rec)
		first := *rec
		first.Status, first.Error = db.StatusFailed, ptr("boom")
		second := *rec
		second.Status = db.StatusCompleted
		if !finalize(t, s, &first) {
			t.Fatal("first finalize lost")
		}
		if finalize(t, s, &second) {
			t.Fatal("a second finalize overwrote a terminal run")
		}
		r := wantStatus(t, s, "r1", db.StatusFailed)
		if r.Error == nil || *r.Error != "boom" {
			t.Fatalf("error %v, want the first finalizer's", r.Error)
		}
	})

	t.Run("ConcurrentFinalizersOneWins", func(t *testing.T) {
		t.Parallel()
		// Two processes of one instance: same owner id, racing.
		ss := stores(t, newURL(t), "a", "a")
		for round := range 5 {
			runID := id("r", round)
			rec := newRun(runID, db.StatusRunning, now())
			submit(t, ss[0], rec)
			won := concurrently(t, 8, func(i int) (bool, error) {
				done := *rec
				done.Status = db.StatusCompleted
				done.RecordsWritten = int64(i + 1)
				return ss[i%2].RunFinish(t.Context(), db.RunFinal{Record: &done, Owned: true})
			})
			winner := onlyWinner(t, won)
			if r := get(t, ss[1], runID); r.RecordsWritten != int64(winner+1) {
				t.Fatalf("stored records_written %d, want the winner's %d", r.RecordsWritten, winner+1)
			}
		}
	})

	t.Run("ShardedParent", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("parent", db.StatusSharded, now()))
		shard(t, s, "parent", shardSpecs("s", 3, nil)...)
		finishAll(t, s, func(sh db.ClaimedShard) db.ShardResult {
			return db.ShardResult{Status: db.ShardCompleted, RecordsWritten: map[string]int64{"s-0000": 10, "s-0001": 20, "s-0002": 30}[sh.ShardID]}
		})
		finishedAt := time.Now().Add(-time.Second)
		ok, err := s.RunFinalizeShardedParent(t.Context(), "parent", db.StatusCompleted, finishedAt, nil)
		if err != nil || !ok {
			t.Fatalf("finalize sharded parent: %v, %v", ok, err)
		}
		r := wantStatus(t, s, "parent", db.StatusCompleted)
		if r.FinishedAt == nil || !r.FinishedAt.Equal(finishedAt.Truncate(time.Microsecond)) {
			t.Fatalf("finished_at %v, want %v", r.FinishedAt, finishedAt)
		}
		if r.RecordsWritten != 10+20+30 {
			t.Fatalf("records_written %d, want the shards' sum 60", r.RecordsWritten)
		}
		if r.Error != nil {
			t.Fatalf("error %q on a completed run", *r.Error)
		}
		ok, err = s.RunFinalizeShardedParent(t.Context(), "parent", db.StatusFailed, time.Now(), ptr("late"))
		if err != nil || ok {
			t.Fatalf("second finalize: %v, %v; want false", ok, err)
		}
		wantStatus(t, s, "parent", db.StatusCompleted)

		submit(t, s, newRun("running", db.StatusRunning, now()))
		for _, runID := range []string{"running", "missing"} {
			if ok, err := s.RunFinalizeShardedParent(t.Context(), runID, db.StatusCompleted, time.Now(), nil); err != nil || ok {
				t.Fatalf("finalize of a %s run as sharded parent: %v, %v; want false", runID, ok, err)
			}
		}
		if _, err := s.RunFinalizeShardedParent(t.Context(), "running", db.StatusRunning, time.Now(), nil); err == nil {
			t.Fatal("finalizing to a non-terminal status is not an error")
		}
	})

	t.Run("ShardedParentWaitsForItsShards", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("parent", db.StatusSharded, now()))
		shard(t, s, "parent", shardSpecs("s", 2, nil)...)
		claimed := shardClaim(t, s, 1)
		for _, state := range []string{"pending", "running"} {
			if ok, err := s.RunFinalizeShardedParent(t.Context(), "parent", db.StatusCompleted, time.Now(), nil); err != nil || ok {
				t.Fatalf("finalize with a shard %s: %v, %v; want false", state, ok, err)
			}
			finishAll(t, s, func(db.ClaimedShard) db.ShardResult { return db.ShardResult{Status: db.ShardCompleted} })
		}
		finishShard(t, s, "parent", claimed[0].ShardID, db.ShardResult{Status: db.ShardCompleted})
		if ok, err := s.RunFinalizeShardedParent(t.Context(), "parent", db.StatusCompleted, time.Now(), nil); err != nil || !ok {
			t.Fatalf("finalize once every shard ended: %v, %v; want true", ok, err)
		}
	})

	t.Run("ShardedParentConcurrentOneWins", func(t *testing.T) {
		t.Parallel()
		ss := stores(t, newURL(t), "a", "b")
		submit(t, ss[0], newRun("parent", db.StatusSharded, now()))
		won := concurrently(t, 8, func(i int) (bool, error) {
			return ss[i%2].RunFinalizeShardedParent(t.Context(), "parent", db.StatusFailed, time.Now(), ptr(fmt.Sprint(i)))
		})
		winner := onlyWinner(t, won)
		if r := get(t, ss[1], "parent"); r.Error == nil || *r.Error != fmt.Sprint(winner) {
			t.Fatalf("stored error %v, want the winner's %d", r.Error, winner)
		}
	})
}

func exerciseCancel(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("CancelPending", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		pendingRuns(t, s, "p", 1)
		submit(t, s, newRun("running", db.StatusRunning, now()))
		ok, err := s.RunCancelPending(t.Context(), "p-0000")
		if err != nil || !ok {
			t.Fatalf("cancel pending: %v, %v", ok, err)
		}
		r := wantStatus(t, s, "p-0000", db.StatusCancelled)
		if r.FinishedAt == nil {
			t.Fatal("cancelled run has no finished_at")
		}
		for _, runID := range []string{"p-0000", "running", "missing"} {
			if ok, err := s.RunCancelPending(t.Context(), runID); err != nil || ok {
				t.Fatalf("cancel pending of %s: %v, %v; want false", runID, ok, err)
			}
		}
		wantStatus(t, s, "running", db.StatusRunning)
	})

	t.Run("CancelPendingRacesClaim", func(t *testing.T) {
		t.Parallel()
		ss := stores(t, newURL(t), "a", "b")
		const n = 40
		recs := pendingRuns(t, ss[0], "p", n)
		// One instance claims oldest first while another cancels newest first.
		got := concurrently(t, 2, func(w int) ([]string, error) {
			var ids []string
			if w == 0 {
				for {
					runs, err := ss[0].RunClaimPending(t.Context(), 3)
					if err != nil || len(runs) == 0 {
						return ids, err
					}
					ids = append(ids, runIDs(runs)...)
				}
			}
			for _, r := range slices.Backward(recs) {
				ok, err := ss[1].RunCancelPending(t.Context(), r.RunID)
				if err != nil {
					return ids, err
				}
				if ok {
					ids = append(ids, r.RunID)
				}
			}
			return ids, nil
		})
		claimed, cancelled := got[0], got[1]
		if len(claimed)+len(cancelled) != n {
			t.Fatalf("%d claimed + %d cancelled, want %d", len(claimed), len(cancelled), n)
		}
		for _, runID := range claimed {
			if slices.Contains(cancelled, runID) {
				t.Fatalf("run %s was both claimed and cancelled", runID)
			}
			wantStatus(t, ss[0], runID, db.StatusRunning)
		}
		for _, runID := range cancelled {
			wantStatus(t, ss[0], runID, db.StatusCancelled)
		}
	})

	t.Run("RequestCancel", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		owner := open(t, url, db.Options{InstanceID: "owner"})
		other := open(t, url, db.Options{InstanceID: "other"})
		for _, st := range db.AllStatuses {
			submit(t, owner, newRun(string(st), st, now()))
		}
		for _, st := range db.AllStatuses {
			want := st == db.StatusRunning || st == db.StatusSharded
			ok, err := other.RunRequestCancel(t.Context(), string(st))
			if err != nil || ok != want {
				t.Fatalf("request cancel of a %s run: %v, %v; want %v", st, ok, err, want)
			}
		}
		if ok, err := other.RunRequestCancel(t.Context(), "running"); err != nil || !ok {
			t.Fatalf("repeated request: %v, %v; want true", ok, err)
		}
		if ok, err := other.RunRequestCancel(t.Context(), "missing"); err != nil || ok {
			t.Fatalf("request cancel of a missing run: %v, %v; want false", ok, err)
		}
		ids, err := owner.RunPendingCancellations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// Only running runs are the owner's to cancel; a sharded run's shards are.
		equalIDs(t, "owner's pending cancellations", []string{"running"}, ids)
		ids, err = other.RunPendingCancellations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "another instance's pending cancellations", nil, ids)
		// The request does not change the status: the owner stops the run.
		wantStatus(t, other, "running", db.StatusRunning)
	})

	t.Run("RequestCancelOfShardedRun", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		coord := open(t, url, db.Options{InstanceID: "coord"})
		worker := open(t, url, db.Options{InstanceID: "worker"})
		submit(t, coord, newRun("parent", db.StatusSharded, now()))
		submit(t, coord, newRun("other", db.StatusSharded, now()))
		shard(t, coord, "parent", shardSpecs("s", 3, ptr(int64(100)))...)
		shard(t, coord, "other", shardSpecs("o", 1, ptr(int64(1)))...)
		got := shardClaim(t, worker, 1)
		if len(got) != 1 || got[0].RunID != "parent" {
			t.Fatalf("claimed %+v, want one shard of parent", got)
		}
		if ok, err := coord.RunRequestCancel(t.Context(), "parent"); err != nil || !ok {
			t.Fatalf("request cancel: %v, %v", ok, err)
		}
		p := progress(t, coord, "parent")
		if p.Cancelled != 2 || p.Running != 1 || p.Pending != 0 {
			t.Fatalf("progress after cancel request %+v, want 2 cancelled and 1 running", p)
		}
		ids, err := worker.ShardPendingCancellations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "worker's shard cancellations", []string{"parent"}, ids)
		ids, err = coord.ShardPendingCancellations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "coordinator's shard cancellations", nil, ids)
		// The other run's shard is unaffected and still claimable.
		rest := shardClaim(t, coord, 10)
		if len(rest) != 1 || rest[0].RunID != "other" {
			t.Fatalf("claim after cancel request: %+v, want only the other run's shard", rest)
		}
	})
}

// wantError fails t unless got is the error text want.
func wantError(t testing.TB, what string, got *string, want string) {
	t.Helper()
	if got == nil || *got != want {
		t.Fatalf("%s: error %v, want %q", what, deref(got), want)
	}
}

// deref shows an optional value in a failure message.
func deref[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}
