package dbtest

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// uuidV4 is the form of a delivery id.
var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// hook is a callback subscribed to every terminal state.
var hook = json.RawMessage(`{"url": "https://hooks.example.com/faucet", "method": "POST"}`)

// withCallback gives rec a callback subscribed to on (nil: every state).
func withCallback(rec *db.RunRecord, on ...db.RunStatus) *db.RunRecord {
	rec.Callback = hook
	if on != nil {
		b, _ := json.Marshal(map[string]any{"url": "https://hooks.example.com/faucet", "on": on})
		rec.Callback = b
	}
	return rec
}

func deliveries(t testing.TB, s db.Store, runID string) []db.CallbackDelivery {
	t.Helper()
	ds, err := s.CallbackList(t.Context(), runID)
	if err != nil {
		t.Fatalf("callback list %s: %v", runID, err)
	}
	return ds
}

// wantDelivery fails t unless runID has exactly one pending, never
// attempted delivery, written at the run's finish, and returns it.
func wantDelivery(t testing.TB, s db.Store, runID string) db.CallbackDelivery {
	t.Helper()
	ds := deliveries(t, s, runID)
	if len(ds) != 1 {
		t.Fatalf("run %s: %d deliveries, want 1: %+v", runID, len(ds), ds)
	}
	d := ds[0]
	r := get(t, s, runID)
	if d.RunID != runID || d.State != db.CallbackPending || d.Attempts != 0 || d.DeliveryID == "" {
		t.Fatalf("run %s: delivery %+v, want a pending one never attempted", runID, d)
	}
	if r.FinishedAt == nil || !d.CreatedAt.Equal(*r.FinishedAt) || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(*r.FinishedAt) {
		t.Fatalf("run %s: delivery created %v, due %v; want both at the run's finish %v", runID, d.CreatedAt, d.NextAttemptAt, r.FinishedAt)
	}
	return d
}

func wantNoDelivery(t testing.TB, s db.Store, runID string) {
	t.Helper()
	if ds := deliveries(t, s, runID); len(ds) != 0 {
		t.Fatalf("run %s: deliveries %+v, want none", runID, ds)
	}
}

func claimCallbacks(t testing.TB, s db.Store, limit int, lease time.Duration, maxAttempts int) db.CallbackClaims {
	t.Helper()
	c, err := s.CallbackClaim(t.Context(), limit, lease, maxAttempts)
	if err != nil {
		t.Fatalf("callback claim: %v", err)
	}
	return c
}

func settle(t testing.TB, s db.Store, r db.CallbackResult) bool {
	t.Helper()
	ok, err := s.CallbackSettle(t.Context(), r)
	if err != nil {
		t.Fatalf("callback settle %s: %v", r.DeliveryID, err)
	}
	return ok
}

// ended writes a terminal run with a callback, as a finalize of a run the
// store lacks does, and returns its delivery.
func ended(t testing.TB, s db.Store, runID string, status db.RunStatus, finishedAt time.Time) db.CallbackDelivery {
	t.Helper()
	rec := withCallback(newRun(runID, status, finishedAt.Add(-time.Second)))
	rec.FinishedAt = &finishedAt
	runFinish(t, s, db.RunFinal{Record: rec})
	return wantDelivery(t, s, runID)
}

func exerciseCallbacks(t *testing.T, newURL func(t testing.TB) string) {
	// Every kind of terminal transition writes the delivery of a run with a
	// callback, and none of a run without one.
	t.Run("EveryTerminalTransitionWritesOneDelivery", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", shortLease)
		s := member(t, url, clk, "live", liveLease)

		// A finalize, owner-fenced and not; the unfenced one of a run the
		// store lacks inserts it terminal.
		for _, cb := range []bool{true, false} {
			sfx := map[bool]string{true: "", false: "-plain"}[cb]
			runs := []*db.RunRecord{newRun("owned"+sfx, db.StatusRunning, now()), newRun("stored"+sfx, db.StatusQueued, now())}
			for _, r := range runs {
				if cb {
					withCallback(r)
				}
			}
			submit(t, s, runs...)
			done := *runs[0]
			done.Status = db.StatusCompleted
			if !finalize(t, s, &done) {
				t.Fatal("owned finalize lost")
			}
			failed := *runs[1]
			failed.Status, failed.Error = db.StatusFailed, ptr("boom")
			runFinish(t, s, db.RunFinal{Record: &failed})
			missing := newRun("missing"+sfx, db.StatusCancelled, now())
			if cb {
				withCallback(missing)
			}
			runFinish(t, s, db.RunFinal{Record: missing})
		}
		// A pending run cancelled.
		pending := withCallback(newRun("pending", db.StatusPending, now()))
		pending.ConfigBody = ptr("version: 1")
		submit(t, s, pending)
		if ok, err := s.RunCancelPending(t.Context(), "pending"); err != nil || !ok {
			t.Fatalf("cancel pending: %v, %v", ok, err)
		}
		// A sharded parent, finalized by its last shard's member and by the
		// sweep.
		for _, runID := range []string{"parent", "swept"} {
			submit(t, s, withCallback(newRun(runID, db.StatusSharded, now())))
			shard(t, s, runID, shardSpecs("s", 2, nil)...)
		}
		finishAll(t, s, func(db.ClaimedShard) db.ShardResult { return db.ShardResult{Status: db.ShardCompleted} })
		if ok, err := s.RunFinalizeShardedParent(t.Context(), "parent", db.StatusCompleted, clk.Now(), nil); err != nil || !ok {
			t.Fatalf("finalize sharded parent: %v, %v", ok, err)
		}
		if ids, err := s.ShardFinalizeCompletedParents(t.Context()); err != nil || len(ids) != 1 {
			t.Fatalf("sweep: %v, %v", ids, err)
		}
		// Crash recovery: lapsed leases, then every unfinished run.
		submit(t, dying, withCallback(newRun("lapsed", db.StatusRunning, now())), newRun("lapsed-plain", db.StatusQueued, now()))
		submit(t, s, withCallback(newRun("orphan", db.StatusRunning, now())))
		lapse(clk)
		if n, err := s.RunFailLapsed(t.Context()); err != nil || n != 2 {
			t.Fatalf("fail lapsed: %d, %v; want 2", n, err)
		}
		if ids, err := s.RunFailUnfinished(t.Context(), "crashed"); err != nil || len(ids) != 1 {
			t.Fatalf("fail unfinished: %v, %v; want orphan", ids, err)
		}
		// A reclaim: the run requeued below the cap has no delivery, the
		// one poisoned at it has.
		const maxAttempts = 1
		for _, runID := range []string{"poison", "requeued"} {
			r := withCallback(newRun(runID, db.StatusPending, now()))
			r.ConfigBody = ptr("version: 1")
			submit(t, s, r)
		}
		if got := claimPending(t, dying, 1); len(got) != 1 || got[0].RunID != "poison" {
			t.Fatalf("claimed %v", runIDs(got))
		}
		lapse(clk)
		wantReport(t, "requeue", reclaim(t, s, maxAttempts), 1, 0)
		if got := claimPending(t, dying, 2); len(got) != 2 {
			t.Fatalf("claimed %v", runIDs(got))
		}
		lapse(clk)
		wantReport(t, "poison", reclaim(t, s, maxAttempts), 1, 1)
		wantStatus(t, s, "poison", db.StatusFailed)
		wantStatus(t, s, "requeued", db.StatusPending)
		wantNoDelivery(t, s, "requeued")

		for _, runID := range []string{"owned", "stored", "missing", "pending", "parent", "swept", "lapsed", "orphan", "poison"} {
			wantDelivery(t, s, runID)
		}
		for _, runID := range []string{"owned-plain", "stored-plain", "missing-plain", "lapsed-plain"} {
			wantNoDelivery(t, s, runID)
		}

		// A terminal record written again gets no second delivery.
		again := get(t, s, "stored")
		again.Status, again.Error = db.StatusCancelled, nil
		before := wantDelivery(t, s, "stored")
		runFinish(t, s, db.RunFinal{Record: again})
		if d := wantDelivery(t, s, "stored"); d.DeliveryID != before.DeliveryID {
			t.Fatalf("rewritten run: delivery %s, was %s", d.DeliveryID, before.DeliveryID)
		}
	})

	t.Run("OnFiltersTheStates", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		cases := []struct {
			runID  string
			on     []db.RunStatus
			status db.RunStatus
			want   bool
		}{
			{"all-completed", nil, db.StatusCompleted, true},
			{"empty-cancelled", []db.RunStatus{}, db.StatusCancelled, true},
			{"failed-only-failed", []db.RunStatus{db.StatusFailed}, db.StatusFailed, true},
			{"failed-only-completed", []db.RunStatus{db.StatusFailed}, db.StatusCompleted, false},
			{"two-cancelled", []db.RunStatus{db.StatusCompleted, db.StatusCancelled}, db.StatusCancelled, true},
			{"two-failed", []db.RunStatus{db.StatusCompleted, db.StatusCancelled}, db.StatusFailed, false},
		}
		for _, c := range cases {
			r := withCallback(newRun(c.runID, db.StatusRunning, now()), c.on...)
			if c.on != nil && len(c.on) == 0 {
				r.Callback = json.RawMessage(`{"url": "https://hooks.example.com/faucet", "on": []}`)
			}
			submit(t, s, r)
			done := *r
			done.Status = c.status
			finalize(t, s, &done)
			if c.want {
				wantDelivery(t, s, c.runID)
			} else {
				wantNoDelivery(t, s, c.runID)
			}
		}
	})

	t.Run("ClaimReturnsTheDueDeliveriesWithTheirRuns", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := member(t, newURL(t), clk, "a", liveLease)
		first := ended(t, s, "first", db.StatusFailed, clk.Now().Add(-time.Minute))
		second := ended(t, s, "second", db.StatusCompleted, clk.Now())
		ended(t, s, "later", db.StatusCompleted, clk.Now().Add(time.Hour))
		c := claimCallbacks(t, s, 10, time.Minute, 3)
		if c.Exhausted != 0 || len(c.Claimed) != 2 {
			t.Fatalf("claimed %+v, want the two due", c)
		}
		for i, want := range []db.CallbackDelivery{first, second} {
			got := c.Claimed[i]
			if got.Delivery.DeliveryID != want.DeliveryID || got.Delivery.Attempts != 1 || got.Run.RunID != want.RunID {
				t.Fatalf("claim %d: %+v, want %s attempted once", i, got.Delivery, want.DeliveryID)
			}
			if got.Delivery.LastAttemptAt == nil || !got.Delivery.LastAttemptAt.Equal(clk.Now().Truncate(time.Microsecond)) {
				t.Fatalf("claim %d: last attempt %v, want the clock's", i, got.Delivery.LastAttemptAt)
			}
			sameJSON(t, "claimed run's callback", hook, got.Run.Callback)
		}
		if c.Claimed[0].Run.Status != db.StatusFailed || c.Claimed[0].Run.FinishedAt == nil {
			t.Fatalf("claimed run %+v, want its terminal record", c.Claimed[0].Run)
		}
		if c := claimCallbacks(t, s, 10, time.Minute, 3); len(c.Claimed) != 0 {
			t.Fatalf("held deliveries claimed again: %+v", c.Claimed)
		}
		if c := claimCallbacks(t, s, 0, time.Minute, 3); len(c.Claimed) != 0 {
			t.Fatalf("a limit of 0 claimed %+v", c.Claimed)
		}
	})

	t.Run("ConcurrentClaimersAcrossStores", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		ss := stores(t, url, "a", "b", "c", "d")
		const n = 40
		for i := range n {
			ended(t, ss[0], id("r", i), db.StatusCompleted, now().Add(-time.Minute))
		}
		drainConcurrently(t, len(ss), n, func(w int) ([]string, error) {
			c, err := ss[w].CallbackClaim(t.Context(), 3, time.Hour, 3)
			keys := make([]string, len(c.Claimed))
			for i, cl := range c.Claimed {
				keys[i] = cl.Delivery.DeliveryID
			}
			return keys, err
		})
	})

	t.Run("SettleRetryDeliverAndFail", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := member(t, newURL(t), clk, "a", liveLease)
		d := ended(t, s, "r", db.StatusCompleted, clk.Now())
		c := claimCallbacks(t, s, 1, time.Minute, 3).Claimed[0].Delivery
		retryAt := clk.Now().Add(time.Minute)
		if settle(t, s, db.CallbackResult{DeliveryID: d.DeliveryID, Attempt: 2, State: db.CallbackDelivered}) {
			t.Fatal("a settle of an attempt never made won")
		}
		if !settle(t, s, db.CallbackResult{DeliveryID: d.DeliveryID, Attempt: c.Attempts, State: db.CallbackPending, RetryAt: retryAt, StatusCode: ptr(503), Error: ptr("HTTP 503")}) {
			t.Fatal("retry settle lost")
		}
		if settle(t, s, db.CallbackResult{DeliveryID: d.DeliveryID, Attempt: c.Attempts, State: db.CallbackDelivered}) {
			t.Fatal("a claim settled twice")
		}
		got := deliveries(t, s, "r")[0]
		if got.State != db.CallbackPending || got.Attempts != 1 || deref(got.LastStatusCode) != 503 || deref(got.LastError) != "HTTP 503" ||
			got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(retryAt.Truncate(time.Microsecond)) {
			t.Fatalf("after a retry: %+v", got)
		}
		if c := claimCallbacks(t, s, 1, time.Minute, 3); len(c.Claimed) != 0 {
			t.Fatal("a retry was claimed before it was due")
		}
		clk.Advance(time.Minute)
		c = claimCallbacks(t, s, 1, time.Minute, 3).Claimed[0].Delivery
		if c.Attempts != 2 {
			t.Fatalf("second claim: attempt %d, want 2", c.Attempts)
		}
		if !settle(t, s, db.CallbackResult{DeliveryID: d.DeliveryID, Attempt: 2, State: db.CallbackDelivered, StatusCode: ptr(204)}) {
			t.Fatal("delivered settle lost")
		}
		got = deliveries(t, s, "r")[0]
		if got.State != db.CallbackDelivered || got.NextAttemptAt != nil || deref(got.LastStatusCode) != 204 || got.LastError != nil ||
			got.FinishedAt == nil || !got.FinishedAt.Equal(clk.Now().Truncate(time.Microsecond)) {
			t.Fatalf("delivered: %+v", got)
		}
		clk.Advance(time.Hour)
		if c := claimCallbacks(t, s, 1, time.Minute, 3); len(c.Claimed) != 0 {
			t.Fatal("a delivered delivery was claimed")
		}

		f := ended(t, s, "f", db.StatusFailed, clk.Now())
		c = claimCallbacks(t, s, 1, time.Minute, 3).Claimed[0].Delivery
		if !settle(t, s, db.CallbackResult{DeliveryID: f.DeliveryID, Attempt: c.Attempts, State: db.CallbackFailed, StatusCode: ptr(410), Error: ptr("HTTP 410")}) {
			t.Fatal("failed settle lost")
		}
		if got := deliveries(t, s, "f")[0]; got.State != db.CallbackFailed || got.FinishedAt == nil || deref(got.LastError) != "HTTP 410" {
			t.Fatalf("failed: %+v", got)
		}
		if _, err := s.CallbackSettle(t.Context(), db.CallbackResult{DeliveryID: f.DeliveryID, State: "sent"}); err == nil {
			t.Fatal("an unknown state is not an error")
		}
	})

	// A member that dies mid-attempt leaves a claim that lapses; a peer
	// takes the delivery over, and the dead member's late answer is lost.
	t.Run("ALapsedClaimIsTakenOver", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		dying := member(t, url, clk, "dying", liveLease)
		peer := member(t, url, clk, "peer", liveLease)
		d := ended(t, peer, "r", db.StatusCompleted, clk.Now())
		first := claimCallbacks(t, dying, 1, time.Second, 3).Claimed
		if len(first) != 1 {
			t.Fatalf("claimed %d", len(first))
		}
		if c := claimCallbacks(t, peer, 1, time.Minute, 3); len(c.Claimed) != 0 {
			t.Fatal("a live claim was taken over")
		}
		clk.Advance(time.Second + time.Microsecond)
		second := claimCallbacks(t, peer, 1, time.Minute, 3).Claimed
		if len(second) != 1 || second[0].Delivery.DeliveryID != d.DeliveryID || second[0].Delivery.Attempts != 2 {
			t.Fatalf("takeover: %+v", second)
		}
		if settle(t, dying, db.CallbackResult{DeliveryID: d.DeliveryID, Attempt: 1, State: db.CallbackDelivered}) {
			t.Fatal("the dead member's settle won over the takeover")
		}
		if !settle(t, peer, db.CallbackResult{DeliveryID: d.DeliveryID, Attempt: 2, State: db.CallbackDelivered}) {
			t.Fatal("the takeover's settle lost")
		}
	})

	t.Run("AttemptsAreBounded", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := member(t, newURL(t), clk, "a", liveLease)
		ended(t, s, "r", db.StatusCompleted, clk.Now())
		const maxAttempts = 2
		for attempt := 1; attempt <= maxAttempts; attempt++ {
			c := claimCallbacks(t, s, 1, time.Second, maxAttempts)
			if c.Exhausted != 0 || len(c.Claimed) != 1 || c.Claimed[0].Delivery.Attempts != attempt {
				t.Fatalf("claim %d: %+v", attempt, c)
			}
			clk.Advance(time.Second + time.Microsecond)
		}
		c := claimCallbacks(t, s, 1, time.Second, maxAttempts)
		if c.Exhausted != 1 || len(c.Claimed) != 0 {
			t.Fatalf("claim past the cap: %+v, want it exhausted", c)
		}
		got := deliveries(t, s, "r")[0]
		if got.State != db.CallbackFailed || got.Attempts != maxAttempts || got.FinishedAt == nil {
			t.Fatalf("exhausted: %+v", got)
		}
		wantError(t, "exhausted delivery", got.LastError, "no attempts left: the process making the last attempt stopped before the target answered")
		if c := claimCallbacks(t, s, 1, time.Second, maxAttempts); c.Exhausted != 0 {
			t.Fatalf("exhausted twice: %+v", c)
		}
		if _, err := s.CallbackClaim(t.Context(), 1, time.Second, 0); err == nil {
			t.Fatal("a cap of 0 attempts is not an error")
		}
	})

	t.Run("ReleaseFreesEveryClaim", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		gone := member(t, url, clk, "gone", liveLease)
		next := member(t, url, clk, "next", liveLease)
		for i := range 3 {
			ended(t, next, id("r", i), db.StatusCompleted, clk.Now())
		}
		if c := claimCallbacks(t, gone, 2, time.Hour, 3); len(c.Claimed) != 2 {
			t.Fatalf("claimed %d", len(c.Claimed))
		}
		n, err := next.CallbackRelease(t.Context())
		if err != nil || n != 2 {
			t.Fatalf("release: %d, %v; want 2", n, err)
		}
		if c := claimCallbacks(t, next, 10, time.Hour, 3); len(c.Claimed) != 3 {
			t.Fatalf("claimed %d after the release, want 3", len(c.Claimed))
		}
	})

	t.Run("DeletedWithTheirRun", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := member(t, newURL(t), clk, "a", liveLease)
		ended(t, s, "deleted", db.StatusCompleted, clk.Now())
		ended(t, s, "purged", db.StatusCompleted, clk.Now().Add(-2*time.Hour))
		ended(t, s, "kept", db.StatusCompleted, clk.Now())
		if out, err := s.RunDelete(t.Context(), "deleted"); err != nil || out != db.Deleted {
			t.Fatalf("delete: %v, %v", out, err)
		}
		purge(t, s, db.PurgePolicy{TerminalRuns: time.Hour})
		wantNoDelivery(t, s, "deleted")
		wantNoDelivery(t, s, "purged")
		wantDelivery(t, s, "kept")
		c := claimCallbacks(t, s, 10, time.Minute, 3)
		if len(c.Claimed) != 1 || c.Claimed[0].Run.RunID != "kept" {
			t.Fatalf("claimed %+v, want kept alone", c.Claimed)
		}
	})

	t.Run("DeliveryIDsAreUUIDs", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		seen := map[string]bool{}
		for i := range 20 {
			d := ended(t, s, id("r", i), db.StatusCompleted, now())
			if !uuidV4.MatchString(d.DeliveryID) {
				t.Fatalf("delivery id %q is not a version 4 UUID", d.DeliveryID)
			}
			if seen[d.DeliveryID] {
				t.Fatalf("delivery id %s twice", d.DeliveryID)
			}
			seen[d.DeliveryID] = true
		}
	})
}
