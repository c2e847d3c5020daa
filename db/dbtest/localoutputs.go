package dbtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func outputIDs(outs []db.LocalOutput) []string {
	ids := make([]string, len(outs))
	for i, o := range outs {
		ids[i] = o.ID
	}
	return ids
}

func record(t testing.TB, s db.Store, w db.LocalOutputWrite) db.LocalOutput {
	t.Helper()
	out, err := s.LocalOutputRecord(t.Context(), w)
	if err != nil {
		t.Fatalf("record %s: %v", w.Path, err)
	}
	return out
}

func exerciseLocalOutputs(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("RecordUpdatesTheLiveEntry", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		first := now().Add(-time.Hour)
		a := record(t, s, db.LocalOutputWrite{Path: "/srv/out/a.jsonl", SizeBytes: 10, RunID: "run-1", Existed: true, FileID: "1:2", At: first})
		if a.ID == "" || a.FirstRunID != "run-1" || a.RunID != "run-1" || !a.ExistedBefore || a.DeletedAt != nil ||
			!a.FirstWrittenAt.Equal(first) || !a.LastWrittenAt.Equal(first) || a.FirstWrittenAt.Location() != time.UTC {
			t.Fatalf("first write = %+v", a)
		}
		// A later write (by a run that found the file faucet wrote) moves the
		// entry on and keeps what the first write saw.
		later := first.Add(time.Minute)
		b := record(t, s, db.LocalOutputWrite{Path: "/srv/out/a.jsonl", SizeBytes: 25, RunID: "run-2", Existed: true, FileID: "1:3", At: later})
		want := a
		want.SizeBytes, want.RunID, want.FileID, want.LastWrittenAt = 25, "run-2", "1:3", later
		sameJSON(t, "second write", want, b)
		got, err := s.LocalOutputGet(t.Context(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "get", want, *got)
		// Without a time the store's clock stamps it.
		c := record(t, s, db.LocalOutputWrite{Path: "/srv/out/c.jsonl", SizeBytes: 1, RunID: "run-2"})
		if c.FirstWrittenAt.IsZero() || c.ExistedBefore || c.FileID != "" {
			t.Fatalf("write without a time = %+v", c)
		}
		if _, err := s.LocalOutputGet(t.Context(), "no-such-entry"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("get a missing entry: %v", err)
		}
	})

	t.Run("DeleteKeepsTheEntry", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		a := record(t, s, db.LocalOutputWrite{Path: "/srv/out/a.jsonl", SizeBytes: 10, RunID: "run-1"})
		del, ok, err := s.LocalOutputMarkDeleted(t.Context(), a.ID)
		if err != nil || !ok || del.DeletedAt == nil || del.ID != a.ID || del.SizeBytes != 10 {
			t.Fatalf("mark deleted = %+v, %v, %v", del, ok, err)
		}
		if _, ok, err := s.LocalOutputMarkDeleted(t.Context(), a.ID); err != nil || ok {
			t.Fatalf("second mark: %v, %v; want false", ok, err)
		}
		if _, ok, err := s.LocalOutputMarkDeleted(t.Context(), "no-such-entry"); err != nil || ok {
			t.Fatalf("mark a missing entry: %v, %v", ok, err)
		}
		// A write to the path starts a new entry; the deleted one stays.
		b := record(t, s, db.LocalOutputWrite{Path: "/srv/out/a.jsonl", SizeBytes: 3, RunID: "run-9", Existed: false})
		if b.ID == a.ID || b.FirstRunID != "run-9" || b.DeletedAt != nil || b.ExistedBefore {
			t.Fatalf("a write after the delete = %+v", b)
		}
		page, err := s.LocalOutputList(t.Context(), db.LocalOutputFilter{})
		if err != nil {
			t.Fatal(err)
		}
		equalIDs(t, "entries", []string{b.ID, a.ID}, outputIDs(page.Outputs))
		if page.Outputs[1].DeletedAt == nil {
			t.Fatal("the deleted entry lost its mark")
		}
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		var ids []string
		for i := range 7 {
			run := []string{"run-a", "run-b"}[i%2]
			dir := []string{"/srv/x/", "/srv/y/"}[i%3/2]
			ids = append(ids, record(t, s, db.LocalOutputWrite{Path: fmt.Sprintf("%sf%d", dir, i), SizeBytes: int64(i), RunID: run}).ID)
		}
		// run-b rewrites f0, which run-a wrote first: both runs list it.
		record(t, s, db.LocalOutputWrite{Path: "/srv/x/f0", SizeBytes: 99, RunID: "run-b"})
		newest := func(idx ...int) []string {
			var out []string
			for i := len(ids) - 1; i >= 0; i-- {
				for _, j := range idx {
					if i == j {
						out = append(out, ids[i])
					}
				}
			}
			return out
		}
		list := func(f db.LocalOutputFilter) db.LocalOutputPage {
			t.Helper()
			p, err := s.LocalOutputList(t.Context(), f)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		equalIDs(t, "run-a", newest(0, 2, 4, 6), outputIDs(list(db.LocalOutputFilter{RunID: ptr("run-a")}).Outputs))
		equalIDs(t, "run-b", newest(0, 1, 3, 5), outputIDs(list(db.LocalOutputFilter{RunID: ptr("run-b")}).Outputs))
		equalIDs(t, "prefix /srv/y/", newest(2, 5), outputIDs(list(db.LocalOutputFilter{PathPrefix: ptr("/srv/y/")}).Outputs))
		equalIDs(t, "prefix with a LIKE wildcard", nil, outputIDs(list(db.LocalOutputFilter{PathPrefix: ptr("/srv/%")}).Outputs))
		equalIDs(t, "run and prefix", newest(2), outputIDs(list(db.LocalOutputFilter{RunID: ptr("run-a"), PathPrefix: ptr("/srv/y/")}).Outputs))

		var paged []string
		f := db.LocalOutputFilter{Limit: 3}
		for pages := 0; ; pages++ {
			p := list(f)
			paged = append(paged, outputIDs(p.Outputs)...)
			if p.NextCursor == nil {
				if pages != 2 {
					t.Fatalf("%d pages of 3 for 7 entries", pages+1)
				}
				break
			}
			f.Cursor = *p.NextCursor
		}
		equalIDs(t, "pages", newest(0, 1, 2, 3, 4, 5, 6), paged)
	})

	t.Run("TerminalWriteCarriesEntries", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		ss := stores(t, url, "a", "b")
		a, b := ss[0], ss[1]
		// A run's terminal write records its sinks' files with it: a new
		// path gets an entry, a path with a live entry moves it on, and a
		// path the run wrote twice is one entry, as the second write left it.
		prev := record(t, a, db.LocalOutputWrite{Path: "/srv/out/kept.jsonl", SizeBytes: 1, RunID: "earlier"})
		submit(t, a, newRun("r1", db.StatusRunning, now()))
		done := newRun("r1", db.StatusCompleted, now())
		if !runFinish(t, a, db.RunFinal{Record: done, Owned: true, Outputs: []db.LocalOutputWrite{
			{Path: "/srv/out/new.jsonl", SizeBytes: 5, RunID: "r1", FileID: "1:1"},
			{Path: "/srv/out/kept.jsonl", SizeBytes: 20, RunID: "r1", Existed: true},
			{Path: "/srv/out/new.jsonl", SizeBytes: 10, RunID: "r1", FileID: "1:2", Existed: true},
		}}) {
			t.Fatal("the owner's terminal write did not land")
		}
		page, err := a.LocalOutputList(t.Context(), db.LocalOutputFilter{RunID: ptr("r1")})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Outputs) != 2 {
			t.Fatalf("entries of r1 = %+v, want 2", page.Outputs)
		}
		for _, o := range page.Outputs {
			switch o.Path {
			case "/srv/out/new.jsonl":
				if o.FirstRunID != "r1" || o.SizeBytes != 10 || o.FileID != "1:2" || o.ExistedBefore || o.FirstWrittenAt.IsZero() {
					t.Errorf("new entry = %+v", o)
				}
			case "/srv/out/kept.jsonl":
				if o.ID != prev.ID || o.FirstRunID != "earlier" || o.RunID != "r1" || o.SizeBytes != 20 {
					t.Errorf("moved entry = %+v, want %s moved on to r1", o, prev.ID)
				}
			default:
				t.Errorf("unexpected entry %+v", o)
			}
		}
		// A fenced write that does not land (b does not own r2) still
		// records the files: its sinks wrote them all the same.
		submit(t, a, newRun("r2", db.StatusRunning, now()))
		if runFinish(t, b, db.RunFinal{Record: newRun("r2", db.StatusFailed, now()), Owned: true, Outputs: []db.LocalOutputWrite{
			{Path: "/srv/out/lost.jsonl", SizeBytes: 3, RunID: "r2"},
		}}) {
			t.Fatal("a terminal write fenced on another owner landed")
		}
		page, err = a.LocalOutputList(t.Context(), db.LocalOutputFilter{RunID: ptr("r2")})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Outputs) != 1 || page.Outputs[0].Path != "/srv/out/lost.jsonl" {
			t.Fatalf("entries of the fenced-out r2 = %+v", page.Outputs)
		}
		// An entry without a path is refused with the whole write.
		submit(t, a, newRun("r3", db.StatusRunning, now()))
		if _, err := a.RunFinish(t.Context(), db.RunFinal{Record: newRun("r3", db.StatusCompleted, now()), Owned: true, Outputs: []db.LocalOutputWrite{{RunID: "r3"}}}); err == nil {
			t.Fatal("a terminal write with an entry without a path was accepted")
		}
		if st, err := a.RunGet(t.Context(), "r3"); err != nil || st.Status != db.StatusRunning {
			t.Fatalf("r3 after the refused write = %+v, %v; want it still running", st, err)
		}
	})

	t.Run("ConcurrentWritesOfOnePath", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		ss := stores(t, url, "a", "b")
		a, b := ss[0], ss[1]
		var wg sync.WaitGroup
		seen := make(chan string, 20)
		for i := range 20 {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				out, err := s.LocalOutputRecord(t.Context(), db.LocalOutputWrite{Path: "/srv/shared.jsonl", SizeBytes: int64(i), RunID: fmt.Sprintf("run-%d", i)})
				if err != nil {
					t.Error(err)
					return
				}
				seen <- out.ID
			})
		}
		wg.Wait()
		close(seen)
		ids := map[string]bool{}
		for id := range seen {
			ids[id] = true
		}
		if len(ids) != 1 {
			t.Fatalf("concurrent writes of one path made %d entries, want one", len(ids))
		}
	})
}
