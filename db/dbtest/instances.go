package dbtest

import (
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func heartbeat(t testing.TB, s db.Store, hb db.InstanceHeartbeat) {
	t.Helper()
	if err := s.InstanceHeartbeat(t.Context(), hb); err != nil {
		t.Fatalf("heartbeat of %s: %v", s.InstanceID(), err)
	}
}

func liveInstances(t testing.TB, s db.Store, ttl time.Duration) []db.InstanceRecord {
	t.Helper()
	got, err := s.InstanceListLive(t.Context(), ttl)
	if err != nil {
		t.Fatalf("live instances: %v", err)
	}
	return got
}

func instanceIDs(recs []db.InstanceRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.InstanceID
	}
	return out
}

func exerciseInstances(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("HeartbeatAndList", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		b := open(t, url, db.Options{InstanceID: "b"})
		a := open(t, url, db.Options{InstanceID: "a"})
		started := time.Now().Add(-time.Hour)
		before := now()
		heartbeat(t, b, db.InstanceHeartbeat{StartedAt: started, Listen: "10.0.0.2:8080", MaxConcurrent: 4, InFlight: 1, StateFormat: 2})
		heartbeat(t, a, db.InstanceHeartbeat{StartedAt: started, MaxConcurrent: 8, InFlight: 0, StateFormat: 3})
		got := liveInstances(t, a, time.Hour)
		equalIDs(t, "live instances", []string{"a", "b"}, instanceIDs(got))
		bRec := got[1]
		if bRec.Listen != "10.0.0.2:8080" || bRec.MaxConcurrent != 4 || bRec.InFlight != 1 || bRec.StateFormat != 2 {
			t.Fatalf("instance b read back as %+v", bRec)
		}
		if got[0].Listen != "" || got[0].MaxConcurrent != 8 || got[0].StateFormat != 3 {
			t.Fatalf("instance a read back as %+v", got[0])
		}
		if !bRec.StartedAt.Equal(started.Truncate(time.Microsecond)) || bRec.StartedAt.Location() != time.UTC {
			t.Fatalf("started_at %v, want %v in UTC", bRec.StartedAt, started)
		}
		if bRec.LastHeartbeat.Before(before) || bRec.LastHeartbeat.After(now()) || bRec.LastHeartbeat.Location() != time.UTC {
			t.Fatalf("last_heartbeat %v, want the time of the heartbeat in UTC", bRec.LastHeartbeat)
		}

		// A second heartbeat updates the row in place.
		heartbeat(t, b, db.InstanceHeartbeat{StartedAt: started, Listen: "10.0.0.2:8080", MaxConcurrent: 4, InFlight: 3, StateFormat: 2})
		got = liveInstances(t, b, time.Hour)
		if len(got) != 2 || got[1].InFlight != 3 || got[1].LastHeartbeat.Before(bRec.LastHeartbeat) {
			t.Fatalf("after a second heartbeat: %+v", got)
		}
	})

	t.Run("LivenessAndPurge", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		url := newURL(t)
		stale := open(t, url, db.Options{InstanceID: "stale", Clock: clk.Now})
		live := open(t, url, db.Options{InstanceID: "live", Clock: clk.Now})
		heartbeat(t, stale, db.InstanceHeartbeat{StartedAt: clk.Now()})
		// The stale member last beat two hours ago, the live one just now.
		clk.Advance(2 * time.Hour)
		const ttl = time.Hour
		heartbeat(t, live, db.InstanceHeartbeat{StartedAt: clk.Now()})
		equalIDs(t, "members within the ttl", []string{"live"}, instanceIDs(liveInstances(t, live, ttl)))
		equalIDs(t, "members within three hours", []string{"live", "stale"}, instanceIDs(liveInstances(t, live, 3*time.Hour)))
		if rep := purge(t, live, db.PurgePolicy{Instances: ttl}); rep.Instances != 1 {
			t.Fatalf("purge: %+v, want 1 member", rep)
		}
		equalIDs(t, "members after the purge", []string{"live"}, instanceIDs(liveInstances(t, live, 3*time.Hour)))
	})
}

// exerciseInstanceWork: each member's running runs and shards, and a run's
// shards one by one.
func exerciseInstanceWork(t *testing.T, newURL func(t testing.TB) string) {
	url := newURL(t)
	s := stores(t, url, "a", "b")
	a, b := s[0], s[1]
	r1, r2 := newRun("r1", db.StatusRunning, now()), newRun("r2", db.StatusSharded, now())
	r1.Name, r2.Name = ptr("one"), ptr("two")
	submit(t, a, r1, newRun("r0", db.StatusQueued, now()))
	submit(t, b, r2)
	shard(t, b, "r2", shardSpecs("s", 3, nil)...)
	claimed := shardClaim(t, a, 1)
	if len(claimed) != 1 {
		t.Fatalf("claimed %d shards, want 1", len(claimed))
	}
	work, err := b.InstanceWorkList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []db.InstanceWork{{Owner: "a", RunID: "r1", Name: ptr("one")}, {Owner: "a", RunID: "r2", ShardID: claimed[0].ShardID, Name: ptr("two")}}
	same := func(a, b db.InstanceWork) bool {
		return a.Owner == b.Owner && a.RunID == b.RunID && a.ShardID == b.ShardID && deref(a.Name) == deref(b.Name)
	}
	if len(work) != len(want) || !same(work[0], want[0]) || !same(work[1], want[1]) {
		t.Fatalf("work %+v, want %+v (queued runs and sharded parents execute nothing)", work, want)
	}

	if !finishShard(t, a, "r2", claimed[0].ShardID, db.ShardResult{Status: db.ShardFailed, RecordsWritten: 7, Error: ptr("boom")}) {
		t.Fatal("the owner could not finalize its shard")
	}
	shards, err := b.ShardList(t.Context(), "r2")
	if err != nil {
		t.Fatal(err)
	}
	equalIDs(t, "shards", []string{"s-0000", "s-0001", "s-0002"}, shardRecordIDs(shards))
	for _, sh := range shards {
		if sh.ShardID == claimed[0].ShardID {
			if sh.Status != db.ShardFailed || deref(sh.Owner) != "a" || sh.RecordsWritten != 7 || deref(sh.Error) != "boom" ||
				sh.FinishedAt == nil || sh.FinishedAt.Location() != time.UTC {
				t.Fatalf("finished shard read back as %+v", sh)
			}
			continue
		}
		if sh.Status != db.ShardPending || sh.Owner != nil || sh.Attempt != 0 || sh.RecordsWritten != 0 || sh.FinishedAt != nil {
			t.Fatalf("pending shard read back as %+v", sh)
		}
	}
	if work, err := b.InstanceWorkList(t.Context()); err != nil || len(work) != 1 {
		t.Fatalf("work after the shard finished: %+v, %v; want r1 alone", work, err)
	}
	if none, err := b.ShardList(t.Context(), "r1"); err != nil || len(none) != 0 {
		t.Fatalf("shards of an unsharded run: %+v, %v", none, err)
	}
}

func shardRecordIDs(shards []db.ShardRecord) []string {
	out := make([]string, len(shards))
	for i, sh := range shards {
		out[i] = sh.ShardID
	}
	return out
}
