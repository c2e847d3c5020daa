package dbtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// shardSpecs builds n shards prefix-0000… with the given size estimate.
func shardSpecs(prefix string, n int, size *int64) []db.ShardInsert {
	out := make([]db.ShardInsert, n)
	for i := range n {
		out[i] = db.ShardInsert{
			ShardID:      id(prefix, i),
			Descriptor:   json.RawMessage(fmt.Sprintf(`{"range": [%d, %d], "table": "orders"}`, i*100, i*100+99)),
			SizeEstimate: size,
		}
	}
	return out
}

// shard adds shards to a running or sharded run s owns, as its coordinator
// does.
func shard(t testing.TB, s db.Store, runID string, shards ...db.ShardInsert) {
	t.Helper()
	if ok, err := s.RunShard(t.Context(), runID, shards); err != nil || !ok {
		t.Fatalf("shard %s: %v, %v", runID, ok, err)
	}
}

// endedSharded writes a run that was split into shards and has ended with
// status at finishedAt, its shards left as they were inserted.
func endedSharded(t testing.TB, s db.Store, runID string, status db.RunStatus, finishedAt time.Time, shards ...db.ShardInsert) {
	t.Helper()
	submit(t, s, newRun(runID, db.StatusSharded, finishedAt))
	shard(t, s, runID, shards...)
	done := newRun(runID, status, finishedAt)
	done.FinishedAt = &finishedAt
	runFinish(t, s, db.RunFinal{Record: done})
}

func shardClaim(t testing.TB, s db.Store, limit int) []db.ClaimedShard {
	t.Helper()
	got, err := s.ShardClaim(t.Context(), limit)
	if err != nil {
		t.Fatalf("claim shards: %v", err)
	}
	return got
}

func progress(t testing.TB, s db.Store, runID string) db.ShardProgress {
	t.Helper()
	p, err := s.ShardProgress(t.Context(), runID)
	if err != nil {
		t.Fatalf("shard progress of %s: %v", runID, err)
	}
	return p
}

func finishShard(t testing.TB, s db.Store, runID, shardID string, res db.ShardResult) bool {
	t.Helper()
	ok, err := s.ShardFinalize(t.Context(), runID, shardID, res)
	if err != nil {
		t.Fatalf("finalize shard %s/%s: %v", runID, shardID, err)
	}
	return ok
}

// finishAll claims every pending shard for s and finalizes each with result.
func finishAll(t testing.TB, s db.Store, result func(db.ClaimedShard) db.ShardResult) {
	t.Helper()
	for _, sh := range shardClaim(t, s, 10000) {
		if !finishShard(t, s, sh.RunID, sh.ShardID, result(sh)) {
			t.Fatalf("owner could not finalize shard %s/%s", sh.RunID, sh.ShardID)
		}
	}
}

func shardKeys(shards []db.ClaimedShard) []string {
	out := make([]string, len(shards))
	for i, sh := range shards {
		out[i] = sh.RunID + "/" + sh.ShardID
	}
	return out
}

func exerciseShards(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Run("ShardingIsIdempotent", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("r1", db.StatusSharded, now()))
		shard(t, s, "r1", shardSpecs("s", 3, nil)...)
		// A re-enumeration adds what is new and keeps what exists.
		shard(t, s, "r1", shardSpecs("s", 4, nil)...)
		shard(t, s, "r1")
		if p := progress(t, s, "r1"); p.Total != 4 || p.Pending != 4 {
			t.Fatalf("progress %+v, want 4 pending", p)
		}
		if p := progress(t, s, "no-shards"); p != (db.ShardProgress{}) || p.AllTerminal() {
			t.Fatalf("progress of a run without shards %+v, want zero", p)
		}
	})

	t.Run("ClaimLargestFirst", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		parent := fullRun("r1")
		parent.Status = db.StatusSharded
		submit(t, s, parent, newRun("r2", db.StatusSharded, now()))
		shard(t, s, "r1",
			db.ShardInsert{ShardID: "small", Descriptor: json.RawMessage(`{"n": 1}`), SizeEstimate: ptr(int64(10))},
			db.ShardInsert{ShardID: "huge", Descriptor: json.RawMessage(`{"n": 2}`), SizeEstimate: ptr(int64(1000))},
			db.ShardInsert{ShardID: "unknown", Descriptor: json.RawMessage(`{"n": 3}`)},
		)
		shard(t, s, "r2",
			db.ShardInsert{ShardID: "mid", Descriptor: json.RawMessage(`{"n": 4}`), SizeEstimate: ptr(int64(500))},
			db.ShardInsert{ShardID: "a-unknown", Descriptor: json.RawMessage(`{"n": 5}`)},
		)
		first := shardClaim(t, s, 2)
		equalIDs(t, "first claim", []string{"r1/huge", "r2/mid"}, shardKeys(first))
		equalIDs(t, "second claim", []string{"r1/small", "r1/unknown", "r2/a-unknown"}, shardKeys(shardClaim(t, s, 10)))
		if got := shardClaim(t, s, 10); len(got) != 0 {
			t.Fatalf("claimed %v with nothing pending", shardKeys(got))
		}
		if got := shardClaim(t, s, 0); len(got) != 0 {
			t.Fatalf("a zero limit claimed %d shards", len(got))
		}
		huge := first[0]
		sameJSON(t, "descriptor", json.RawMessage(`{"n": 2}`), huge.Descriptor)
		if huge.Attempt != 0 {
			t.Fatalf("first claim: attempt %d, want 0", huge.Attempt)
		}
		sameJSON(t, "parent run of a claimed shard", normalized(parent), huge.Run)
		if p := progress(t, s, "r1"); p.Running != 3 || p.Pending != 0 {
			t.Fatalf("progress %+v, want 3 running", p)
		}
	})

	t.Run("ProgressInFlightCountsTheShardsOfRunningShardedRuns", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b"})
		inFlight := func(s db.Store) db.ShardProgress {
			t.Helper()
			p, err := s.ShardProgressInFlight(t.Context())
			if err != nil {
				t.Fatalf("shard progress in flight: %v", err)
			}
			return p
		}
		if p := inFlight(a); p != (db.ShardProgress{}) {
			t.Fatalf("progress in flight of an empty history %+v, want zero", p)
		}
		submit(t, a, newRun("r1", db.StatusSharded, now()), newRun("r2", db.StatusSharded, now()))
		shard(t, a, "r1", shardSpecs("s", 3, ptr(int64(100)))...)
		shard(t, a, "r2", shardSpecs("s", 2, ptr(int64(10)))...)
		// A finished run's shards are history, not work in flight.
		endedSharded(t, a, "done", db.StatusCompleted, now(), shardSpecs("s", 4, nil)...)
		claimed := shardClaim(t, a, 2)
		equalIDs(t, "claim", []string{"r1/s-0000", "r1/s-0001"}, shardKeys(claimed))
		finishShard(t, a, "r1", "s-0000", db.ShardResult{Status: db.ShardCompleted, RecordsWritten: 7})
		equalIDs(t, "claim", []string{"r1/s-0002"}, shardKeys(shardClaim(t, b, 1)))
		finishShard(t, b, "r1", "s-0002", db.ShardResult{Status: db.ShardFailed, RecordsWritten: 2, Error: ptr("boom")})
		want := db.ShardProgress{Total: 5, Pending: 2, Running: 1, Completed: 1, Failed: 1, RecordsWritten: 9}
		// Every member counts the whole cluster, not its own shards.
		for _, s := range []db.Store{a, b} {
			if p := inFlight(s); p != want {
				t.Fatalf("progress in flight %+v, want %+v", p, want)
			}
		}
		if ok, err := a.RunRequestCancel(t.Context(), "r2"); err != nil || !ok {
			t.Fatalf("cancel r2: %v %v", ok, err)
		}
		want.Pending, want.Cancelled = 0, 2
		if p := inFlight(b); p != want {
			t.Fatalf("progress in flight after a cancel %+v, want %+v", p, want)
		}
	})

	t.Run("CompletedShardsKeepTheirLineage", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("r1", db.StatusSharded, now()))
		shard(t, s, "r1", shardSpecs("s", 4, nil)...)
		finishAll(t, s, func(sh db.ClaimedShard) db.ShardResult {
			switch sh.ShardID {
			case "s-0000":
				return db.ShardResult{Status: db.ShardCompleted, Lineage: json.RawMessage(`{"shard": 0}`)}
			case "s-0001":
				// A failed shard's lineage is not the run's.
				return db.ShardResult{Status: db.ShardFailed, Error: ptr("boom"), Lineage: json.RawMessage(`{"shard": 1}`)}
			case "s-0002":
				return db.ShardResult{Status: db.ShardCompleted}
			}
			return db.ShardResult{Status: db.ShardCompleted, Lineage: json.RawMessage(`{"shard": 3}`)}
		})
		docs, err := s.ShardLineages(t.Context(), "r1")
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 2 {
			t.Fatalf("lineages %s, want those of shards 0 and 3", docs)
		}
		sameJSON(t, "shard 0", json.RawMessage(`{"shard": 0}`), docs[0])
		sameJSON(t, "shard 3", json.RawMessage(`{"shard": 3}`), docs[1])
	})

	t.Run("ConcurrentClaimersAcrossStores", func(t *testing.T) {
		t.Parallel()
		ss := stores(t, newURL(t), "a", "b", "c")
		const perRun = 100
		for r := range 3 {
			submit(t, ss[0], newRun(id("run", r), db.StatusSharded, now()))
			shard(t, ss[0], id("run", r), shardSpecs("s", perRun, ptr(int64(r)))...)
		}
		drainConcurrently(t, 9, 3*perRun, func(w int) ([]string, error) {
			got, err := ss[w%3].ShardClaim(t.Context(), 7)
			return shardKeys(got), err
		})
	})

	t.Run("FinalizeIsOwnerFenced", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a"})
		b := open(t, url, db.Options{InstanceID: "b"})
		submit(t, a, newRun("r1", db.StatusSharded, now()))
		shard(t, a, "r1", shardSpecs("s", 2, nil)...)
		res := db.ShardResult{Status: db.ShardCompleted, RecordsWritten: 7}
		if finishShard(t, a, "r1", "s-0000", res) {
			t.Fatal("finalized a pending shard nobody claimed")
		}
		shardClaim(t, a, 2)
		if finishShard(t, b, "r1", "s-0000", res) {
			t.Fatal("an instance finalized a shard it does not own")
		}
		if !finishShard(t, a, "r1", "s-0000", res) {
			t.Fatal("the owner could not finalize its shard")
		}
		if finishShard(t, a, "r1", "s-0000", db.ShardResult{Status: db.ShardFailed, Error: ptr("late")}) {
			t.Fatal("a finalized shard was finalized again")
		}
		if !finishShard(t, a, "r1", "s-0001", db.ShardResult{Status: db.ShardFailed, RecordsWritten: 3, Error: ptr("boom")}) {
			t.Fatal("the owner could not fail its shard")
		}
		if _, err := a.ShardFinalize(t.Context(), "r1", "s-0001", db.ShardResult{Status: db.ShardRunning}); err == nil {
			t.Fatal("finalizing a shard to a non-terminal status is not an error")
		}
		p := progress(t, a, "r1")
		want := db.ShardProgress{Total: 2, Completed: 1, Failed: 1, RecordsWritten: 10}
		if p != want || !p.AllTerminal() {
			t.Fatalf("progress %+v, want %+v", p, want)
		}
	})

	t.Run("RenewAndReclaim", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		// Both claim with short leases; "renewing" renews through a second
		// store of its instance that grants long ones.
		renewing := member(t, url, clk, "renewing", shortLease)
		renewer := member(t, url, clk, "renewing", liveLease)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		submit(t, peer, newRun("r1", db.StatusSharded, now()))
		shard(t, peer, "r1", shardSpecs("s", 4, nil)...)
		if got := shardClaim(t, renewing, 2); len(got) != 2 {
			t.Fatalf("claimed %d shards, want 2", len(got))
		}
		dyingShards := shardClaim(t, dying, 2)
		if len(dyingShards) != 2 {
			t.Fatalf("claimed %d shards, want 2", len(dyingShards))
		}
		lapse(clk)
		if keys, err := renewer.ShardRenewLeases(t.Context()); err != nil || len(keys) != 2 {
			t.Fatalf("renew: %v, %v; want the 2 shards it claimed", keys, err)
		}
		rep, err := peer.ShardRequeueLapsed(t.Context(), 3)
		if err != nil {
			t.Fatal(err)
		}
		wantReport(t, "shard requeue", rep, 2, 0)
		p := progress(t, peer, "r1")
		if p.Pending != 2 || p.Running != 2 {
			t.Fatalf("progress %+v, want 2 pending (reclaimed) and 2 running (renewed)", p)
		}
		again := shardClaim(t, peer, 10)
		if len(again) != 2 || again[0].Attempt != 1 || again[1].Attempt != 1 {
			t.Fatalf("reclaimed shards claimed again: %+v, want 2 at attempt 1", again)
		}
		late := dyingShards[0]
		if finishShard(t, dying, late.RunID, late.ShardID, db.ShardResult{Status: db.ShardCompleted}) {
			t.Fatal("the owner whose lease lapsed finalized a reclaimed shard")
		}
		if !finishShard(t, peer, late.RunID, late.ShardID, db.ShardResult{Status: db.ShardCompleted}) {
			t.Fatal("the new owner could not finalize the shard")
		}
	})

	// The lease of a shard lapses on each of its executions under a cap of
	// one requeue: the first reclaim requeues it, the second fails it as
	// poison with an error that counts exactly that.
	t.Run("PoisonAtTheCap", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		submit(t, peer, newRun("r1", db.StatusSharded, now()))
		shard(t, peer, "r1", shardSpecs("s", 1, nil)...)
		const maxAttempts = 1
		for attempt := range maxAttempts + 1 {
			if got := shardClaim(t, dying, 1); len(got) != 1 || got[0].Attempt != attempt {
				t.Fatalf("claim %d: %+v", attempt, got)
			}
			lapse(clk)
			rep, err := peer.ShardRequeueLapsed(t.Context(), maxAttempts)
			if err != nil {
				t.Fatal(err)
			}
			if attempt < maxAttempts {
				wantReport(t, "reclaim below the cap", rep, 1, 0)
			} else {
				wantReport(t, "reclaim at the cap", rep, 0, 1)
			}
		}
		if p := progress(t, peer, "r1"); p.Failed != 1 || !p.AllTerminal() {
			t.Fatalf("progress %+v, want the shard failed", p)
		}
		wantError(t, "poisoned shard", peek.ShardError(t, url, "r1", "s-0000"),
			"poison shard: its owner's lease lapsed during attempt 2 (requeue count 1, cap 1); not retried")
	})

	t.Run("CancelRequestedRunIsNotClaimed", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		submit(t, s, newRun("r1", db.StatusSharded, now()))
		shard(t, s, "r1", shardSpecs("s", 2, nil)...)
		if ok, err := s.RunRequestCancel(t.Context(), "r1"); err != nil || !ok {
			t.Fatalf("request cancel: %v, %v", ok, err)
		}
		// Shards inserted after the request (a late re-enumeration) stay put.
		shard(t, s, "r1", shardSpecs("late", 1, nil)...)
		if got := shardClaim(t, s, 10); len(got) != 0 {
			t.Fatalf("claimed %v of a run with a cancel request", shardKeys(got))
		}
	})

	// A shard whose worker dies after its run was cancelled goes back to
	// pending, where no member will claim it: the sweep cancels it and the
	// run ends cancelled instead of staying sharded forever.
	t.Run("SweepCancelsShardsStrandedByACancel", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		peer := member(t, url, clk, "peer", liveLease)
		submit(t, peer, newRun("r1", db.StatusSharded, now()))
		shard(t, peer, "r1", shardSpecs("s", 2, nil)...)
		if got := shardClaim(t, dying, 1); len(got) != 1 {
			t.Fatalf("claimed %d shards, want 1", len(got))
		}
		if ok, err := peer.RunRequestCancel(t.Context(), "r1"); err != nil || !ok {
			t.Fatalf("request cancel: %v, %v", ok, err)
		}
		lapse(clk)
		rep, err := peer.ShardRequeueLapsed(t.Context(), 3)
		if err != nil {
			t.Fatal(err)
		}
		wantReport(t, "requeue of the dead worker's shard", rep, 1, 0)
		ids, err := peer.ShardFinalizeCompletedParents(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "finalized parents", []string{"r1"}, ids)
		wantStatus(t, peer, "r1", db.StatusCancelled)
		if p := progress(t, peer, "r1"); p.Cancelled != 2 || !p.AllTerminal() {
			t.Fatalf("progress %+v, want both shards cancelled", p)
		}
		wantError(t, "the shard pending at the cancel request", peek.ShardError(t, url, "r1", "s-0001"), "run cancelled before the shard started")
		wantError(t, "the shard requeued after it", peek.ShardError(t, url, "r1", "s-0000"), "run cancelled before the shard finished")
	})

	t.Run("SweepFinalizesCompletedParents", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		s := open(t, url, db.Options{InstanceID: "a"})
		other := open(t, url, db.Options{InstanceID: "b"})
		started := now().Add(-time.Minute)
		for _, runID := range []string{"all-done", "one-failed", "one-cancelled", "still-running", "no-shards"} {
			r := newRun(runID, db.StatusSharded, now())
			r.StartedAt = &started
			submit(t, s, r)
		}
		for _, runID := range []string{"all-done", "one-failed", "one-cancelled", "still-running"} {
			shard(t, s, runID, shardSpecs("s", 3, nil)...)
		}
		// A run no longer sharded is not the sweep's, whatever its shards.
		endedSharded(t, s, "finished", db.StatusCompleted, now(), shardSpecs("s", 3, nil)...)
		// still-running keeps one shard claimed but unfinished.
		for _, sh := range shardClaim(t, other, 10000) {
			if sh.RunID == "still-running" && sh.ShardID == "s-0002" {
				continue
			}
			res := db.ShardResult{Status: db.ShardCompleted, RecordsWritten: 5}
			switch {
			case sh.RunID == "one-failed" && sh.ShardID == "s-0001":
				res = db.ShardResult{Status: db.ShardFailed, RecordsWritten: 1, Error: ptr("boom")}
			case sh.RunID == "one-cancelled" && sh.ShardID == "s-0001":
				res = db.ShardResult{Status: db.ShardCancelled}
			}
			if !finishShard(t, other, sh.RunID, sh.ShardID, res) {
				t.Fatalf("could not finalize %s/%s", sh.RunID, sh.ShardID)
			}
		}

		ids, err := s.ShardFinalizeCompletedParents(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "finalized parents", []string{"all-done", "one-cancelled", "one-failed"}, ids)

		done := wantStatus(t, s, "all-done", db.StatusCompleted)
		if done.RecordsWritten != 15 || done.Error != nil || done.FinishedAt == nil {
			t.Fatalf("completed parent: records %d, error %v, finished_at %v", done.RecordsWritten, done.Error, done.FinishedAt)
		}
		if done.ElapsedSecs == nil || *done.ElapsedSecs < 60 {
			t.Errorf("completed parent: elapsed_secs %v, want >= 60", done.ElapsedSecs)
		}
		failed := wantStatus(t, s, "one-failed", db.StatusFailed)
		if failed.RecordsWritten != 11 {
			t.Fatalf("failed parent: records %d, want 11", failed.RecordsWritten)
		}
		wantError(t, "failed parent", failed.Error, "1/3 shard(s) failed")
		wantStatus(t, s, "one-cancelled", db.StatusCancelled)
		wantStatus(t, s, "still-running", db.StatusSharded)
		wantStatus(t, s, "no-shards", db.StatusSharded)
		if r := wantStatus(t, s, "finished", db.StatusCompleted); r.RecordsWritten != 0 {
			t.Fatalf("finished run: records %d, want its own 0", r.RecordsWritten)
		}

		ids, err = other.ShardFinalizeCompletedParents(t.Context())
		if err != nil || len(ids) != 0 {
			t.Fatalf("second sweep: %v, %v; want nothing", ids, err)
		}
	})
}
