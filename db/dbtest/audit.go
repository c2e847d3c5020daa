package dbtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func auditList(t testing.TB, s db.Store, f db.AuditFilter) []db.AuditEntry {
	t.Helper()
	got, err := s.AuditList(t.Context(), f)
	if err != nil {
		t.Fatalf("audit list: %v", err)
	}
	return got
}

func auditIDs(entries []db.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

func exerciseAudit(t *testing.T, newURL func(t testing.TB) string) {
	base := now().Add(-time.Hour)
	// entries: e-00 oldest … e-09 newest; e-05 and e-06 share a timestamp.
	entries := func() []db.AuditEntry {
		var out []db.AuditEntry
		for i := range 10 {
			at := i
			if i == 6 {
				at = 5
			}
			e := db.AuditEntry{
				ID:        fmt.Sprintf("e-%02d", i),
				Timestamp: base.Add(time.Duration(at) * time.Minute),
				Principal: []string{"alice", "bob"}[i%2],
				Role:      "operator",
				Action:    []string{"run.submit", "run.cancel", "run.delete"}[i%3],
				Result:    "ok",
			}
			if i%3 == 0 {
				e.RunID = ptr(fmt.Sprintf("run-%d", i))
				e.ConfigFingerprint = ptr("sha256:abc")
				e.SourceIP = ptr("10.0.0.1")
			}
			if i == 9 {
				e.Result = "denied"
			}
			out = append(out, e)
		}
		return out
	}

	t.Run("RoundTripNewestFirst", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		all := entries()
		for _, e := range all {
			if err := s.AuditInsert(t.Context(), e); err != nil {
				t.Fatal(err)
			}
		}
		got := auditList(t, s, db.AuditFilter{})
		equalIDs(t, "newest first", []string{"e-09", "e-08", "e-07", "e-06", "e-05", "e-04", "e-03", "e-02", "e-01", "e-00"}, auditIDs(got))
		for _, e := range got {
			if e.Timestamp.Location() != time.UTC {
				t.Errorf("entry %s timestamp in %v, want UTC", e.ID, e.Timestamp.Location())
			}
			var want db.AuditEntry
			for _, w := range all {
				if w.ID == e.ID {
					want = w
				}
			}
			sameJSON(t, "audit entry "+e.ID, want, e)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		for _, e := range entries() {
			if err := s.AuditInsert(t.Context(), e); err != nil {
				t.Fatal(err)
			}
		}
		since, until := base.Add(2*time.Minute), base.Add(5*time.Minute)
		cases := []struct {
			name string
			f    db.AuditFilter
			want []string
		}{
			{"principal", db.AuditFilter{Principal: ptr("alice")}, []string{"e-08", "e-06", "e-04", "e-02", "e-00"}},
			{"action", db.AuditFilter{Action: ptr("run.cancel")}, []string{"e-07", "e-04", "e-01"}},
			{"since and until are inclusive", db.AuditFilter{Since: &since, Until: &until}, []string{"e-06", "e-05", "e-04", "e-03", "e-02"}},
			{"limit", db.AuditFilter{Limit: 3}, []string{"e-09", "e-08", "e-07"}},
			{"combined", db.AuditFilter{Principal: ptr("bob"), Action: ptr("run.submit"), Since: &since}, []string{"e-09", "e-03"}},
			{"no match", db.AuditFilter{Principal: ptr("mallory")}, nil},
		}
		for _, c := range cases {
			equalIDs(t, c.name, c.want, auditIDs(auditList(t, s, c.f)))
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		for i := range db.DefaultAuditLimit + 5 {
			e := db.AuditEntry{ID: fmt.Sprintf("e-%04d", i), Timestamp: base.Add(time.Duration(i) * time.Second),
				Principal: "p", Role: "admin", Action: "run.submit", Result: "ok"}
			if err := s.AuditInsert(t.Context(), e); err != nil {
				t.Fatal(err)
			}
		}
		if got := auditList(t, s, db.AuditFilter{}); len(got) != db.DefaultAuditLimit {
			t.Fatalf("zero limit returned %d entries, want %d", len(got), db.DefaultAuditLimit)
		}
	})
}
