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
