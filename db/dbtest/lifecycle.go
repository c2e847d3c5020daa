package dbtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

const (
	// shortLease expires quickly; tests wait for it to pass.
	shortLease = 200 * time.Millisecond
	// liveLease outlasts any stall of a busy test machine: a lease given it
	// is live for the whole test.
	liveLease = 10 * time.Minute
)

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
	rep, err := s.RunReclaimOrphans(t.Context(), maxAttempts)
	if err != nil {
		t.Fatalf("reclaim orphans: %v", err)
	}
	return rep
}

func finalize(t testing.TB, s db.Store, rec *db.RunRecord) bool {
	t.Helper()
	ok, err := s.RunFinalizeOwned(t.Context(), rec)
	if err != nil {
		t.Fatalf("finalize %s: %v", rec.RunID, err)
	}
	return ok
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
	upsert(t, s, recs...)
	return recs
}

func exerciseLeases(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("UpsertStampsOwner", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		rec := newRun("r1", db.StatusRunning, now())
		upsert(t, a, rec)
		done := *rec
		done.Status = db.StatusCompleted
		if finalize(t, b, &done) {
			t.Fatal("an instance that does not own the run finalized it")
		}
		wantStatus(t, a, "r1", db.StatusRunning)
		// An upsert by b makes b the owner.
		upsert(t, b, rec)
		if finalize(t, a, &done) {
			t.Fatal("the previous owner finalized a run another instance took over")
		}
		if !finalize(t, b, &done) {
			t.Fatal("the owner could not finalize its run")
		}
	})

	t.Run("RenewCountsOwnNonTerminalRuns", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		for _, st := range db.AllStatuses {
			upsert(t, a, newRun("a-"+string(st), st, now()))
		}
		upsert(t, b, newRun("b-running", db.StatusRunning, now()))
		n, err := a.RunRenewLeases(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 { // pending, queued, running, sharded
			t.Fatalf("renewed %d leases, want 4", n)
		}
		c := open(t, url, db.Options{InstanceID: "c"})
		if n, err := c.RunRenewLeases(t.Context()); err != nil || n != 0 {
			t.Fatalf("an instance owning nothing renewed %d leases (%v)", n, err)
		}
	})

	t.Run("RecoverFailsOnlyExpiredLeases", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
		live := open(t, url, db.Options{InstanceID: "live", LeaseTTL: time.Hour})
		started := now().Add(-time.Minute)
		queued := newRun("queued", db.StatusQueued, now())
		running := newRun("running", db.StatusRunning, now())
		running.StartedAt = &started
		done := newRun("done", db.StatusCompleted, now())
		done.FinishedAt = ptr(now())
		pending := newRun("pending", db.StatusPending, now())
		upsert(t, dying, queued, running, done, pending)
		t0 := time.Now()
		upsert(t, live, newRun("peer", db.StatusRunning, now()))
		waitPast(t0, shortLease)

		before := now()
		n, err := live.RunRecoverOrphans(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Fatalf("recovered %d runs, want 2 (queued and running)", n)
		}
		for _, id := range []string{"queued", "running"} {
			r := wantStatus(t, live, id, db.StatusFailed)
			if r.Error == nil || *r.Error == "" {
				t.Errorf("recovered run %s has no error", id)
			}
			if r.FinishedAt == nil || r.FinishedAt.Before(before) {
				t.Errorf("recovered run %s: finished_at %v, want at or after %v", id, r.FinishedAt, before)
			}
		}
		if r := get(t, live, "running"); r.ElapsedSecs == nil || *r.ElapsedSecs < 60 {
			t.Errorf("recovered run that had started: elapsed_secs %v, want >= 60", r.ElapsedSecs)
		}
		wantStatus(t, live, "done", db.StatusCompleted)
		wantStatus(t, live, "pending", db.StatusPending)
		wantStatus(t, live, "peer", db.StatusRunning)
		if n, err := live.RunRecoverOrphans(t.Context()); err != nil || n != 0 {
			t.Fatalf("second recovery: %d, %v; want 0", n, err)
		}
	})

	t.Run("RenewalPreventsReclaimAndRecovery", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		// Two stores of one instance "a": one grants short leases, one long.
		aShort := open(t, url, db.Options{InstanceID: "a", LeaseTTL: shortLease})
		aLong := open(t, url, db.Options{InstanceID: "a", LeaseTTL: liveLease})
		b := open(t, url, db.Options{InstanceID: "b", LeaseTTL: liveLease})
		upsert(t, aShort, newRun("r1", db.StatusRunning, now()), newRun("q1", db.StatusQueued, now()))
		waitPast(time.Now(), shortLease)
		// The leases lapsed; a renewal makes them live again.
		if n, err := aLong.RunRenewLeases(t.Context()); err != nil || n != 2 {
			t.Fatalf("renew: %d, %v; want 2", n, err)
		}
		wantReport(t, "reclaim after renewal", reclaim(t, b, 3), 0, 0)
		if n, err := b.RunRecoverOrphans(t.Context()); err != nil || n != 0 {
			t.Fatalf("recovery after renewal: %d, %v; want 0", n, err)
		}
		wantStatus(t, b, "r1", db.StatusRunning)
		// A renewal is what keeps them: once the last one grants a short
		// lease and it lapses, the run is reclaimed.
		if n, err := aShort.RunRenewLeases(t.Context()); err != nil || n != 2 {
			t.Fatalf("short renew: %d, %v; want 2", n, err)
		}
		waitPast(time.Now(), shortLease)
		wantReport(t, "reclaim once the renewed lease lapsed", reclaim(t, b, 3), 1, 0)
	})
}

func exerciseClaimPending(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("OldestFirst", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		recs := pendingRuns(t, s, "p", 5)
		// A tie on submitted_at is broken by run id.
		tie := newRun("p-0001a", db.StatusPending, recs[1].SubmittedAt)
		upsert(t, s, tie)
		upsert(t, s, newRun("queued", db.StatusQueued, recs[0].SubmittedAt.Add(-time.Hour)))
		upsert(t, s, newRun("running", db.StatusRunning, recs[0].SubmittedAt.Add(-time.Hour)))

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
	t.Run("RequeuesExpiredRunning", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
		peer := open(t, url, db.Options{InstanceID: "peer", LeaseTTL: liveLease})
		pendingRuns(t, peer, "p", 1)
		claimed := claimPending(t, dying, 1)
		if len(claimed) != 1 {
			t.Fatal("nothing claimed")
		}
		upsert(t, dying, newRun("queued", db.StatusQueued, now()))
		t0 := time.Now()
		upsert(t, peer, newRun("live", db.StatusRunning, now()))
		waitPast(t0, shortLease)

		wantReport(t, "reclaim", reclaim(t, peer, 3), 1, 0)
		r := wantStatus(t, peer, "p-0000", db.StatusPending)
		if r.Attempt != 1 {
			t.Fatalf("requeued run: attempt %d, want 1", r.Attempt)
		}
		wantStatus(t, peer, "queued", db.StatusQueued)
		wantStatus(t, peer, "live", db.StatusRunning)
		wantReport(t, "second reclaim", reclaim(t, peer, 3), 0, 0)

		// The old owner's late result is discarded; the run is claimable again.
		late := claimed[0]
		late.Status = db.StatusCompleted
		if finalize(t, dying, &late) {
			t.Fatal("the owner whose lease lapsed finalized a requeued run")
		}
		again := claimPending(t, peer, 1)
		if len(again) != 1 || again[0].RunID != "p-0000" || again[0].Attempt != 1 {
			t.Fatalf("reclaimed run claimed again: %+v", again)
		}
	})

	t.Run("CancelRequestSurvivesRequeue", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
		peer := open(t, url, db.Options{InstanceID: "peer", LeaseTTL: liveLease})
		pendingRuns(t, peer, "p", 1)
		claimPending(t, dying, 1)
		t0 := time.Now()
		if ok, err := peer.RunRequestCancel(t.Context(), "p-0000"); err != nil || !ok {
			t.Fatalf("request cancel: %v, %v", ok, err)
		}
		waitPast(t0, shortLease)
		wantReport(t, "reclaim", reclaim(t, peer, 3), 1, 0)
		claimPending(t, peer, 1)
		ids, err := peer.RunPendingCancellations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "cancellations of the new owner", []string{"p-0000"}, ids)
	})

	t.Run("PoisonAtTheCap", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
		peer := open(t, url, db.Options{InstanceID: "peer", LeaseTTL: liveLease})
		const maxAttempts = 2
		pendingRuns(t, peer, "p", 1)
		for attempt := range maxAttempts + 1 {
			got := claimPending(t, dying, 1)
			if len(got) != 1 || got[0].Attempt != attempt {
				t.Fatalf("claim %d: %+v", attempt, got)
			}
			waitPast(time.Now(), shortLease)
			rep := reclaim(t, peer, maxAttempts)
			if attempt < maxAttempts {
				wantReport(t, fmt.Sprintf("reclaim after attempt %d", attempt), rep, 1, 0)
				continue
			}
			wantReport(t, "reclaim at the cap", rep, 0, 1)
		}
		r := wantStatus(t, peer, "p-0000", db.StatusFailed)
		// Three executions (attempts 0, 1, 2), each lease lapsed, two requeues.
		wantError(t, "poisoned run", r.Error, "poison run: its owner's lease lapsed during attempt 3 (requeue count 2, cap 2); not retried")
		if r.FinishedAt == nil {
			t.Fatal("poisoned run has no finished_at")
		}
		if r.Attempt != maxAttempts {
			t.Fatalf("poisoned run: attempt %d, want %d", r.Attempt, maxAttempts)
		}
		wantReport(t, "reclaim after poisoning", reclaim(t, peer, maxAttempts), 0, 0)
	})

	// A hand-over by RunRelease counts as a requeue too, and may carry a run
	// past the cap: the poison text counts what happened to that row.
	t.Run("PoisonTextCountsAHandOver", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
		peer := open(t, url, db.Options{InstanceID: "peer", LeaseTTL: liveLease})
		const maxAttempts = 1
		pendingRuns(t, peer, "p", 1)
		claimPending(t, dying, 1)
		waitPast(time.Now(), shortLease)
		wantReport(t, "reclaim below the cap", reclaim(t, peer, maxAttempts), 1, 0)
		claimPending(t, dying, 1)
		if ok, err := dying.RunRelease(t.Context(), "p-0000"); err != nil || !ok {
			t.Fatalf("release at the cap: %v, %v", ok, err)
		}
		if got := claimPending(t, dying, 1); len(got) != 1 || got[0].Attempt != 2 {
			t.Fatalf("claim after the hand-over: %+v, want attempt 2", got)
		}
		waitPast(time.Now(), shortLease)
		wantReport(t, "reclaim past the cap", reclaim(t, peer, maxAttempts), 0, 1)
		r := wantStatus(t, peer, "p-0000", db.StatusFailed)
		wantError(t, "poisoned run", r.Error, "poison run: its owner's lease lapsed during attempt 3 (requeue count 2, cap 1); not retried")
	})

	t.Run("ConcurrentReclaimersCountEachRunOnce", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		dying := open(t, url, db.Options{InstanceID: "dying", LeaseTTL: shortLease})
		peers := stores(t, url, "a", "b", "c")
		const n = 60
		pendingRuns(t, dying, "p", n)
		if got := claimPending(t, dying, n); len(got) != n {
			t.Fatalf("claimed %d runs, want %d", len(got), n)
		}
		// Runs with attempt 1 are poisoned with a cap of 1, the rest requeued.
		for i := range n / 3 {
			r := get(t, dying, id("p", i))
			r.Attempt = 1
			upsert(t, dying, r)
		}
		waitPast(time.Now(), shortLease)
		reps := concurrently(t, len(peers), func(i int) (db.ReclaimReport, error) {
			return peers[i].RunReclaimOrphans(t.Context(), 1)
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
	t.Run("WritesTheWholeRecordAndStampsFinishedAt", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := fullRun("r1")
		rec.Status = db.StatusRunning
		rec.FinishedAt = nil
		upsert(t, s, rec)
		done := *rec
		done.Status = db.StatusCompleted
		done.RecordsWritten = 99
		before := now()
		if !finalize(t, s, &done) {
			t.Fatal("the owner could not finalize its run")
		}
		if done.FinishedAt != nil {
			t.Fatal("finalize modified the caller's record")
		}
		got := get(t, s, "r1")
		if got.FinishedAt == nil || got.FinishedAt.Before(before) || got.FinishedAt.After(now()) {
			t.Fatalf("finished_at %v, want stamped at finalize", got.FinishedAt)
		}
		want := normalized(&done)
		want.FinishedAt = got.FinishedAt
		sameJSON(t, "finalized record", want, got)
	})

	t.Run("FirstFinalizerWins", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := newRun("r1", db.StatusRunning, now())
		upsert(t, s, rec)
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
			upsert(t, ss[0], rec)
			won := concurrently(t, 8, func(i int) (bool, error) {
				done := *rec
				done.Status = db.StatusCompleted
				done.RecordsWritten = int64(i + 1)
				return ss[i%2].RunFinalizeOwned(t.Context(), &done)
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
		upsert(t, s, newRun("parent", db.StatusSharded, now()))
		insertShards(t, s, "parent", shardSpecs("s", 3, nil)...)
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

		upsert(t, s, newRun("running", db.StatusRunning, now()))
		for _, runID := range []string{"running", "missing"} {
			if ok, err := s.RunFinalizeShardedParent(t.Context(), runID, db.StatusCompleted, time.Now(), nil); err != nil || ok {
				t.Fatalf("finalize of a %s run as sharded parent: %v, %v; want false", runID, ok, err)
			}
		}
		if _, err := s.RunFinalizeShardedParent(t.Context(), "running", db.StatusRunning, time.Now(), nil); err == nil {
			t.Fatal("finalizing to a non-terminal status is not an error")
		}
	})

	t.Run("ShardedParentConcurrentOneWins", func(t *testing.T) {
		t.Parallel()
		ss := stores(t, newURL(t), "a", "b")
		upsert(t, ss[0], newRun("parent", db.StatusSharded, now()))
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
		upsert(t, s, newRun("running", db.StatusRunning, now()))
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
			upsert(t, owner, newRun(string(st), st, now()))
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
		upsert(t, coord, newRun("parent", db.StatusSharded, now()))
		upsert(t, coord, newRun("other", db.StatusSharded, now()))
		insertShards(t, coord, "parent", shardSpecs("s", 3, ptr(int64(100)))...)
		insertShards(t, coord, "other", shardSpecs("o", 1, ptr(int64(1)))...)
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

// deref shows an optional string in a failure message.
func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
