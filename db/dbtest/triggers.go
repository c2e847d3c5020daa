package dbtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func slotFire(trigger string, slot time.Time) db.TriggerFire {
	return db.TriggerFire{
		Trigger: trigger, Key: slot.UTC().Format(time.RFC3339), Kind: db.TriggerKindSchedule,
		Subject: slot.Format(time.RFC3339), EventAt: slot,
	}
}

func exerciseTriggers(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("FireWrittenWithItsRunOnce", func(t *testing.T) {
		t.Parallel()
		s := open(t, newURL(t), db.Options{InstanceID: "a"})
		slot := now().Truncate(time.Second)
		audit := &db.AuditEntry{ID: "au-1", Timestamp: now(), Principal: "trigger:nightly", Role: "operator", Action: "run.submit", Result: "ok"}
		if err := s.RunSubmitFired(t.Context(), newRun("r1", db.StatusQueued, now()), audit, slotFire("nightly", slot)); err != nil {
			t.Fatalf("first fire: %v", err)
		}
		err := s.RunSubmitFired(t.Context(), newRun("r2", db.StatusQueued, now()), &db.AuditEntry{
			ID: "au-2", Timestamp: now(), Principal: "trigger:nightly", Role: "operator", Action: "run.submit", Result: "ok",
		}, slotFire("nightly", slot))
		if !errors.Is(err, db.ErrAlreadyFired) || db.Retriable(err) {
			t.Fatalf("second fire of one slot: %v, want permanent ErrAlreadyFired", err)
		}
		// Nothing of the losing submit was written: no run, no audit entry.
		if _, err := s.RunGet(t.Context(), "r2"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("run of the losing fire: %v, want ErrNotFound", err)
		}
		if got := auditIDs(auditList(t, s, db.AuditFilter{})); len(got) != 1 || got[0] != "au-1" {
			t.Fatalf("audit entries %v, want only the winner's", got)
		}
		wantStatus(t, s, "r1", db.StatusQueued)
		// Another trigger, or another slot, is another event.
		submitFired(t, s, "r3", slotFire("hourly", slot))
		submitFired(t, s, "r4", slotFire("nightly", slot.Add(time.Second)))
		// Deleting the run leaves the slot fired.
		done := newRun("r1", db.StatusCompleted, now())
		done.FinishedAt = ptr(now())
		if _, err := s.RunFinish(t.Context(), db.RunFinal{Record: done}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RunDelete(t.Context(), "r1"); err != nil {
			t.Fatal(err)
		}
		if err := s.RunSubmitFired(t.Context(), newRun("r5", db.StatusQueued, now()), nil, slotFire("nightly", slot)); !errors.Is(err, db.ErrAlreadyFired) {
			t.Fatalf("fire after its run was deleted: %v, want ErrAlreadyFired", err)
		}
	})

	t.Run("ConcurrentFiresHaveOneWinner", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		stores := []db.Store{open(t, url, db.Options{InstanceID: "a"}), open(t, url, db.Options{InstanceID: "b"}), open(t, url, db.Options{InstanceID: "c"})}
		slot := now().Truncate(time.Second)
		const racers = 12
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for i := range racers {
			wg.Go(func() {
				errs[i] = stores[i%len(stores)].RunSubmitFired(t.Context(), newRun(fmt.Sprintf("race-%02d", i), db.StatusPending, now()), nil, slotFire("t", slot))
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, db.ErrAlreadyFired):
				t.Fatalf("racer %d: %v", i, err)
			}
		}
		page, err := stores[0].RunList(t.Context(), db.ListFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if won != 1 || len(page.Runs) != 1 {
			t.Fatalf("%d racers won, %d runs stored; want one of each", won, len(page.Runs))
		}
	})

	t.Run("Arm", func(t *testing.T) {
		t.Parallel()
		c := newClock()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a", Clock: c.Now})
		b := open(t, url, db.Options{InstanceID: "b", Clock: c.Now})
		first := micro(c.Now())
		if got := arm(t, a, "t", "fp1"); !got.Equal(first) {
			t.Fatalf("first arm at %v, want now %v", got, first)
		}
		c.Advance(time.Hour)
		if got := arm(t, b, "t", "fp1"); !got.Equal(first) {
			t.Fatalf("re-arm with the same settings at %v, want the first arm's %v", got, first)
		}
		if got := arm(t, b, "t", "fp2"); !got.Equal(micro(c.Now())) {
			t.Fatalf("arm with other settings at %v, want now %v", got, micro(c.Now()))
		}
		if got := arm(t, a, "other", "fp1"); !got.Equal(micro(c.Now())) {
			t.Fatalf("another trigger armed at %v, want now", got)
		}
	})

	t.Run("NewestFiredAndPrune", func(t *testing.T) {
		t.Parallel()
		s := open(t, newURL(t), db.Options{InstanceID: "a"})
		if _, err := s.TriggerNewestFire(t.Context(), "t"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("newest fire of a trigger that never fired: %v, want ErrNotFound", err)
		}
		base := now().Truncate(time.Second).Add(-time.Hour)
		var keys []string
		for i := range 5 {
			f := slotFire("t", base.Add(time.Duration(i)*time.Minute))
			submitFired(t, s, fmt.Sprintf("r%d", i), f)
			keys = append(keys, f.Key)
		}
		submitFired(t, s, "other", slotFire("u", base.Add(time.Hour)))
		newest, err := s.TriggerNewestFire(t.Context(), "t")
		if err != nil || !newest.Equal(base.Add(4*time.Minute)) {
			t.Fatalf("newest fire %v, %v; want %v", newest, err, base.Add(4*time.Minute))
		}
		fired, err := s.TriggerFired(t.Context(), "t", append(keys[:2:2], "never", keys[4]))
		if err != nil || len(fired) != 3 || !fired[keys[0]] || !fired[keys[1]] || !fired[keys[4]] || fired["never"] {
			t.Fatalf("fired %v, %v; want the three fired keys", fired, err)
		}
		many := make([]string, 1200)
		for i := range many {
			many[i] = fmt.Sprintf("k%04d", i)
		}
		many[1100] = keys[3]
		if fired, err := s.TriggerFired(t.Context(), "t", many); err != nil || len(fired) != 1 || !fired[keys[3]] {
			t.Fatalf("fired among 1200 keys %v, %v; want the one", fired, err)
		}
		// A cutoff past every fire keeps the newest.
		n, err := s.TriggerPrune(t.Context(), "t", base.Add(24*time.Hour))
		if err != nil || n != 4 {
			t.Fatalf("pruned %d, %v; want 4", n, err)
		}
		if fired, _ := s.TriggerFired(t.Context(), "t", keys); len(fired) != 1 || !fired[keys[4]] {
			t.Fatalf("left after prune %v, want the newest", fired)
		}
		if newest, err := s.TriggerNewestFire(t.Context(), "u"); err != nil || !newest.Equal(base.Add(time.Hour)) {
			t.Fatalf("another trigger's fires were pruned: %v, %v", newest, err)
		}
	})

	t.Run("RefusesAFireWithoutItsIdentity", func(t *testing.T) {
		t.Parallel()
		s := open(t, newURL(t), db.Options{InstanceID: "a"})
		err := s.RunSubmitFired(t.Context(), newRun("r1", db.StatusQueued, now()), nil, db.TriggerFire{Trigger: "t", Kind: "webhook", Key: "k"})
		if err == nil || db.Retriable(err) {
			t.Fatalf("fire of an unknown kind: %v, want a permanent error", err)
		}
		if _, err := s.RunGet(t.Context(), "r1"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("run of a refused fire: %v", err)
		}
	})
}

func submitFired(t testing.TB, s db.Store, runID string, f db.TriggerFire) {
	t.Helper()
	if err := s.RunSubmitFired(t.Context(), newRun(runID, db.StatusQueued, now()), nil, f); err != nil {
		t.Fatalf("fire %s/%s: %v", f.Trigger, f.Key, err)
	}
}

func arm(t testing.TB, s db.Store, trigger, fp string) time.Time {
	t.Helper()
	at, err := s.TriggerArm(t.Context(), trigger, fp)
	if err != nil {
		t.Fatalf("arm %s: %v", trigger, err)
	}
	return at
}

func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
