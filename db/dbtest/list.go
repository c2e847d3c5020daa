package dbtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func list(t testing.TB, s db.Store, f db.ListFilter) db.ListPage {
	t.Helper()
	p, err := s.RunList(t.Context(), f)
	if err != nil {
		t.Fatalf("list %+v: %v", f, err)
	}
	return p
}

// listAll pages through f and returns every run id in order, checking that
// every page but the last is full and carries a cursor.
func listAll(t testing.TB, s db.Store, f db.ListFilter) []string {
	t.Helper()
	var ids []string
	for range 1000 {
		p := list(t, s, f)
		ids = append(ids, runIDs(p.Runs)...)
		if p.NextCursor == nil {
			return ids
		}
		if len(p.Runs) != f.Limit {
			t.Fatalf("page of %d runs with a next cursor, want %d", len(p.Runs), f.Limit)
		}
		if *p.NextCursor != p.Runs[len(p.Runs)-1].RunID {
			t.Fatalf("next cursor %q, want the last run of the page %q", *p.NextCursor, p.Runs[len(p.Runs)-1].RunID)
		}
		f.Cursor = *p.NextCursor
	}
	t.Fatal("pagination does not end")
	return nil
}

// newestFirst orders recs the way RunList must: submitted_at DESC, run_id DESC.
func newestFirst(recs []*db.RunRecord) []string {
	sorted := slices.Clone(recs)
	slices.SortFunc(sorted, func(a, b *db.RunRecord) int {
		if c := b.SubmittedAt.Compare(a.SubmittedAt); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
	ids := make([]string, len(sorted))
	for i, r := range sorted {
		ids[i] = r.RunID
	}
	return ids
}

func exerciseList(t *testing.T, newURL func(t testing.TB) string) {
	base := now().Add(-time.Hour)

	// A run history with ties on submitted_at, several statuses and names.
	history := func(t *testing.T) (db.Store, []*db.RunRecord) {
		s := fresh(t, newURL, "a")
		statuses := []db.RunStatus{db.StatusCompleted, db.StatusFailed, db.StatusRunning, db.StatusCancelled, db.StatusQueued}
		var recs []*db.RunRecord
		for i := range 25 {
			// Every third run shares its submitted_at with the one before.
			at := base.Add(time.Duration(i-i/3) * time.Second)
			r := newRun(fmt.Sprintf("run-%02d", (i*7)%25), statuses[i%len(statuses)], at)
			if i%2 == 0 {
				r.Name = ptr("even")
			} else {
				r.Name = ptr("odd")
			}
			// Every third run comes from a template, in one of two versions.
			if i%3 == 0 {
				r.TemplateID, r.TemplateVersion = ptr("tpl"), ptr(1+i%2)
			} else if i%4 == 0 {
				r.TemplateID, r.TemplateVersion = ptr("other-tpl"), ptr(1)
			}
			recs = append(recs, r)
		}
		submit(t, s, recs...)
		return s, recs
	}

	t.Run("KeysetPagination", func(t *testing.T) {
		t.Parallel()
		s, recs := history(t)
		want := newestFirst(recs)
		for _, limit := range []int{1, 7, 10, 25, 26, 100} {
			equalIDs(t, fmt.Sprintf("all pages of %d", limit), want, listAll(t, s, db.ListFilter{Limit: limit}))
		}
	})

	t.Run("NextCursorExactlyWhenMoreRows", func(t *testing.T) {
		t.Parallel()
		s, recs := history(t)
		if p := list(t, s, db.ListFilter{Limit: len(recs)}); p.NextCursor != nil || len(p.Runs) != len(recs) {
			t.Fatalf("a page holding every run: %d runs, cursor %v; want %d and none", len(p.Runs), p.NextCursor, len(recs))
		}
		p := list(t, s, db.ListFilter{Limit: len(recs) - 1})
		if p.NextCursor == nil {
			t.Fatal("no cursor although one run is left")
		}
		last := list(t, s, db.ListFilter{Limit: len(recs) - 1, Cursor: *p.NextCursor})
		if len(last.Runs) != 1 || last.NextCursor != nil {
			t.Fatalf("last page: %d runs, cursor %v; want 1 and none", len(last.Runs), last.NextCursor)
		}
	})

	t.Run("CursorNamingNoRunIsAnError", func(t *testing.T) {
		t.Parallel()
		s, recs := history(t)
		want := newestFirst(recs)
		// A cursor that names no run, or a run deleted since it was handed
		// out, is refused rather than read as the first page again; the
		// last run as a cursor is an empty last page.
		oldest := want[len(want)-1]
		if p, err := s.RunList(t.Context(), db.ListFilter{Limit: 5, Cursor: oldest}); err != nil || len(p.Runs) != 0 || p.NextCursor != nil {
			t.Fatalf("after the oldest run: %d runs, cursor %v, %v; want an empty last page", len(p.Runs), p.NextCursor, err)
		}
		// Filters that match nothing after a valid cursor are no error either.
		if _, err := s.RunList(t.Context(), db.ListFilter{Limit: 5, Cursor: want[0], Name: ptr("nobody")}); err != nil {
			t.Fatalf("a valid cursor with a filter matching nothing: %v", err)
		}
		if out, err := s.RunDelete(t.Context(), oldest); err != nil || out != db.Deleted {
			t.Fatalf("delete %s: %v, %v", oldest, out, err)
		}
		for _, f := range []db.ListFilter{
			{Limit: 5, Cursor: "no-such-run"},
			{Limit: 5, Cursor: oldest},
			{Limit: 5, Cursor: "no-such-run", Statuses: []db.RunStatus{db.StatusRunning}},
			{Limit: 5, Cursor: "no-such-run", Statuses: []db.RunStatus{db.StatusCompleted}, Name: ptr("odd")},
		} {
			p, err := s.RunList(t.Context(), f)
			if !errors.Is(err, db.ErrUnknownCursor) {
				t.Fatalf("list %+v: %d runs, %v; want ErrUnknownCursor", f, len(p.Runs), err)
			}
			if db.TransienceOf(err) != db.Permanent {
				t.Fatalf("list %+v: %v is %v, want permanent", f, err, db.TransienceOf(err))
			}
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		for i := range db.DefaultListLimit + 3 {
			submit(t, s, newRun(id("r", i), db.StatusCompleted, base.Add(time.Duration(i)*time.Millisecond)))
		}
		p := list(t, s, db.ListFilter{})
		if len(p.Runs) != db.DefaultListLimit || p.NextCursor == nil {
			t.Fatalf("zero limit: %d runs, cursor %v; want %d and a cursor", len(p.Runs), p.NextCursor, db.DefaultListLimit)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		s, recs := history(t)
		match := func(keep func(r *db.RunRecord) bool) []string {
			var out []*db.RunRecord
			for _, r := range recs {
				if keep(r) {
					out = append(out, r)
				}
			}
			return newestFirst(out)
		}
		since, until := base.Add(5*time.Second), base.Add(12*time.Second)
		cases := []struct {
			name string
			f    db.ListFilter
			keep func(r *db.RunRecord) bool
		}{
			{"one status", db.ListFilter{Statuses: []db.RunStatus{db.StatusFailed}},
				func(r *db.RunRecord) bool { return r.Status == db.StatusFailed }},
			{"statuses are OR-ed", db.ListFilter{Statuses: []db.RunStatus{db.StatusCompleted, db.StatusRunning}},
				func(r *db.RunRecord) bool { return r.Status == db.StatusCompleted || r.Status == db.StatusRunning }},
			{"name", db.ListFilter{Name: ptr("odd")},
				func(r *db.RunRecord) bool { return *r.Name == "odd" }},
			{"since and until are inclusive", db.ListFilter{Since: &since, Until: &until},
				func(r *db.RunRecord) bool { return !r.SubmittedAt.Before(since) && !r.SubmittedAt.After(until) }},
			{"all together", db.ListFilter{Statuses: []db.RunStatus{db.StatusCompleted, db.StatusQueued}, Name: ptr("even"), Since: &since},
				func(r *db.RunRecord) bool {
					return (r.Status == db.StatusCompleted || r.Status == db.StatusQueued) && *r.Name == "even" && !r.SubmittedAt.Before(since)
				}},
			{"nothing matches", db.ListFilter{Name: ptr("nobody")},
				func(*db.RunRecord) bool { return false }},
			{"template", db.ListFilter{Template: ptr("tpl")},
				func(r *db.RunRecord) bool { return r.TemplateID != nil && *r.TemplateID == "tpl" }},
			{"template with a status and a name", db.ListFilter{Template: ptr("tpl"), Statuses: []db.RunStatus{db.StatusCompleted, db.StatusQueued}, Name: ptr("even")},
				func(r *db.RunRecord) bool {
					return r.TemplateID != nil && *r.TemplateID == "tpl" && (r.Status == db.StatusCompleted || r.Status == db.StatusQueued) && *r.Name == "even"
				}},
			{"template with active statuses", db.ListFilter{Template: ptr("other-tpl"), Statuses: []db.RunStatus{db.StatusRunning, db.StatusQueued}},
				func(r *db.RunRecord) bool {
					return r.TemplateID != nil && *r.TemplateID == "other-tpl" && (r.Status == db.StatusRunning || r.Status == db.StatusQueued)
				}},
			{"unknown template", db.ListFilter{Template: ptr("no-such-template")},
				func(*db.RunRecord) bool { return false }},
			// Runs pass through these statuses; a dialect may read them
			// another way than a history walk.
			{"active statuses", db.ListFilter{Statuses: []db.RunStatus{db.StatusRunning, db.StatusQueued}},
				func(r *db.RunRecord) bool { return r.Status == db.StatusRunning || r.Status == db.StatusQueued }},
			{"active statuses with every filter", db.ListFilter{Statuses: []db.RunStatus{db.StatusPending, db.StatusQueued, db.StatusRunning}, Name: ptr("odd"), Since: &since, Until: &until},
				func(r *db.RunRecord) bool {
					return (r.Status == db.StatusQueued || r.Status == db.StatusRunning) && *r.Name == "odd" && !r.SubmittedAt.Before(since) && !r.SubmittedAt.After(until)
				}},
		}
		for _, c := range cases {
			want := match(c.keep)
			c.f.Limit = 3
			equalIDs(t, c.name, want, listAll(t, s, c.f))
		}
	})

	t.Run("ReturnsWholeRecords", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		rec := fullRun("r1")
		submit(t, s, rec)
		p := list(t, s, db.ListFilter{Limit: 10})
		if len(p.Runs) != 1 {
			t.Fatalf("%d runs, want 1", len(p.Runs))
		}
		sameJSON(t, "listed record", normalized(rec), p.Runs[0])
		wantUTC(t, &p.Runs[0])
	})
}

func exerciseDelete(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		out, err := s.RunDelete(t.Context(), "missing")
		if err != nil || out != db.DeleteNotFound {
			t.Fatalf("delete missing run: %v, %v; want not_found", out, err)
		}
	})

	t.Run("StillRunning", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		for _, st := range db.AllStatuses {
			if st.Terminal() {
				continue
			}
			submit(t, s, newRun("r-"+string(st), st, now()))
			out, err := s.RunDelete(t.Context(), "r-"+string(st))
			if err != nil || out != db.DeleteStillRunning {
				t.Fatalf("delete %s run: %v, %v; want still_running", st, out, err)
			}
			wantStatus(t, s, "r-"+string(st), st)
		}
	})

	t.Run("DeletesWithClaimsShardsAndLogs", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		for _, st := range []db.RunStatus{db.StatusCompleted, db.StatusFailed, db.StatusCancelled} {
			victim, keeper := "gone-"+string(st), "kept-"+string(st)
			for _, runID := range []string{victim, keeper} {
				endedSharded(t, s, runID, st, now(), shardSpecs("s", 1, nil)...)
				wantClaim(t, claim(t, s, "key-"+runID, "fp", runID, time.Hour), db.ClaimFresh, "")
				appendLogs(t, s, runID, 0, logLines(1, 3, now()))
			}
			out, err := s.RunDelete(t.Context(), victim)
			if err != nil || out != db.Deleted {
				t.Fatalf("delete %s run: %v, %v; want deleted", st, out, err)
			}
			if _, err := s.RunGet(t.Context(), victim); !errors.Is(err, db.ErrNotFound) {
				t.Fatalf("get deleted run: %v, want ErrNotFound", err)
			}
			// The key is free again, the shards and logs are gone.
			wantClaim(t, claim(t, s, "key-"+victim, "fp2", "new-run", time.Hour), db.ClaimFresh, "")
			if p := progress(t, s, victim); p.Total != 0 {
				t.Fatalf("deleted run still has %d shards", p.Total)
			}
			if p := logPage(t, s, victim, 0, 100); len(p.Lines) != 0 {
				t.Fatalf("deleted run still has %d log lines", len(p.Lines))
			}
			// The other run keeps everything.
			wantClaim(t, claim(t, s, "key-"+keeper, "fp", "other", time.Hour), db.ClaimReplay, keeper)
			if p := progress(t, s, keeper); p.Total != 1 {
				t.Fatalf("untouched run has %d shards, want 1", p.Total)
			}
			if p := logPage(t, s, keeper, 0, 100); len(p.Lines) != 3 {
				t.Fatalf("untouched run has %d log lines, want 3", len(p.Lines))
			}
			out, err = s.RunDelete(t.Context(), victim)
			if err != nil || out != db.DeleteNotFound {
				t.Fatalf("second delete: %v, %v; want not_found", out, err)
			}
		}
	})
}
