package dbtest

import (
	"errors"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func purge(t testing.TB, s db.Store, p db.PurgePolicy) db.PurgeReport {
	t.Helper()
	rep, err := s.Purge(t.Context(), p)
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	return rep
}

func exercisePurge(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Run("TerminalRunsWithShardsAndLogs", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		long := clk.Now().Add(-2 * time.Hour)
		for _, st := range []db.RunStatus{db.StatusCompleted, db.StatusFailed, db.StatusCancelled} {
			endedSharded(t, s, "old-"+string(st), st, long, shardSpecs("s", 2, nil)...)
			recent := newRun("recent-"+string(st), st, long)
			recent.FinishedAt = ptr(clk.Now())
			submit(t, s, recent)
			appendLogs(t, s, "old-"+string(st), 0, logLines(1, 3, now()))
		}
		// Non-terminal runs stay, however old.
		submit(t, s, newRun("old-running", db.StatusRunning, long), newRun("old-pending", db.StatusPending, long))

		if rep := purge(t, s, db.PurgePolicy{}); rep != (db.PurgeReport{}) {
			t.Fatalf("an empty policy purged %+v", rep)
		}
		rep := purge(t, s, db.PurgePolicy{TerminalRuns: time.Hour})
		if rep.Runs != 3 || rep.Shards != 6 {
			t.Fatalf("purged %+v, want 3 runs and 6 shards", rep)
		}
		for _, st := range []db.RunStatus{db.StatusCompleted, db.StatusFailed, db.StatusCancelled} {
			if _, err := s.RunGet(t.Context(), "old-"+string(st)); !errors.Is(err, db.ErrNotFound) {
				t.Fatalf("purged run still readable: %v", err)
			}
			if p := logPage(t, s, "old-"+string(st), 0, 10); len(p.Lines) != 0 {
				t.Fatalf("purged run still has %d log lines", len(p.Lines))
			}
			wantStatus(t, s, "recent-"+string(st), st)
		}
		wantStatus(t, s, "old-running", db.StatusRunning)
		wantStatus(t, s, "old-pending", db.StatusPending)
	})

	t.Run("OrphanShardsAlways", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		s := open(t, url, db.Options{InstanceID: "a"})
		submit(t, s, newRun("alive", db.StatusSharded, now()), newRun("ghost", db.StatusSharded, now()))
		shard(t, s, "alive", shardSpecs("s", 2, nil)...)
		shard(t, s, "ghost", shardSpecs("s", 3, nil)...)
		peek.DropRun(t, url, "ghost")
		if rep := purge(t, s, db.PurgePolicy{}); rep.Shards != 3 {
			t.Fatalf("purged %+v, want the 3 orphan shards", rep)
		}
		if p := progress(t, s, "alive"); p.Total != 2 {
			t.Fatalf("shards of a live run: %d, want 2", p.Total)
		}
	})

	t.Run("ClaimsMembersAndAudit", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		a := open(t, url, db.Options{InstanceID: "a", Clock: clk.Now})
		b := open(t, url, db.Options{InstanceID: "b", Clock: clk.Now})
		long := clk.Now().Add(-2 * time.Hour)
		for i, ts := range []time.Time{long, long, clk.Now().Add(2 * time.Hour)} {
			e := db.AuditEntry{ID: id("e", i), Timestamp: ts, Principal: "p", Role: "admin", Action: "run.submit", Result: "ok"}
			if err := a.AuditInsert(t.Context(), e); err != nil {
				t.Fatal(err)
			}
		}
		// The old claim and member a become two hours old; the new claim and
		// member b are younger than the hour the purge keeps.
		wantClaim(t, claim(t, a, "old-key", "fp", "r1", time.Hour), db.ClaimFresh, "")
		heartbeat(t, a, db.InstanceHeartbeat{StartedAt: clk.Now()})
		clk.Advance(2 * time.Hour)
		wantClaim(t, claim(t, a, "new-key", "fp", "r2", time.Hour), db.ClaimFresh, "")
		heartbeat(t, b, db.InstanceHeartbeat{StartedAt: clk.Now()})

		rep := purge(t, a, db.PurgePolicy{IdempotencyClaims: time.Hour, Instances: time.Hour, Audit: time.Hour})
		want := db.PurgeReport{IdempotencyClaims: 1, Instances: 1, Audit: 2}
		if rep != want {
			t.Fatalf("purged %+v, want %+v", rep, want)
		}
		wantClaim(t, claim(t, a, "old-key", "fp", "r3", time.Hour), db.ClaimFresh, "")
		wantClaim(t, claim(t, a, "new-key", "fp", "r4", time.Hour), db.ClaimReplay, "r2")
		equalIDs(t, "members after purge", []string{"b"}, instanceIDs(liveInstances(t, a, 3*time.Hour)))
		equalIDs(t, "audit after purge", []string{"e-0002"}, auditIDs(auditList(t, a, db.AuditFilter{})))
	})
}
