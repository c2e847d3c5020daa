package dbtest

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// A csv file read into a table, and the table read into a jsonl file.
const (
	csvURI   = "file:///data/in.csv"
	tableURI = "postgres://db.example:5432/app/public.people"
	jsonlURI = "file:///data/out.jsonl"
)

var peopleSchema = []db.SchemaColumn{{Name: "id", Type: "string"}, {Name: "name", Type: "string"}}

// invocation is one row of a run moving src into dst.
func invocation(runID string, at time.Time, src, dst db.CatalogObservation) db.CatalogInvocation {
	return db.CatalogInvocation{
		RunID: runID, Pipeline: "people", RowID: "default", Status: db.StatusCompleted,
		RecordedAt: at, Duration: 1500 * time.Millisecond,
		Sources: []db.CatalogObservation{src}, Sinks: []db.CatalogObservation{dst},
	}
}

func batch(invs ...db.CatalogInvocation) db.CatalogBatch {
	return db.CatalogBatch{ID: rand.Text(), Invocations: invs}
}

func observed(uri, kind string, records int64, schema []db.SchemaColumn) db.CatalogObservation {
	return db.CatalogObservation{URI: uri, Kind: kind, Records: records, Bytes: ptr(records * 10), Schema: schema}
}

// record records each invocation in a batch of its own.
func recordCatalog(t testing.TB, s db.Store, invs ...db.CatalogInvocation) {
	t.Helper()
	for _, inv := range invs {
		if err := s.CatalogRecord(t.Context(), batch(inv)); err != nil {
			t.Fatalf("record %s/%s: %v", inv.RunID, inv.RowID, err)
		}
	}
}

// putSnapshots records config snapshots in one batch.
func putSnapshots(t testing.TB, s db.Store, snaps ...db.ConfigSnapshot) {
	t.Helper()
	if err := s.CatalogRecord(t.Context(), db.CatalogBatch{ID: rand.Text(), Snapshots: snaps}); err != nil {
		t.Fatalf("record snapshots: %v", err)
	}
}

func detail(t testing.TB, s db.Store, uri string) *db.CatalogDatasetDetail {
	t.Helper()
	d, err := s.CatalogDatasetGet(t.Context(), db.DatasetID(uri))
	if err != nil {
		t.Fatalf("get dataset %s: %v", uri, err)
	}
	return d
}

func datasets(t testing.TB, s db.Store, f db.CatalogFilter) db.CatalogPage {
	t.Helper()
	page, err := s.CatalogDatasetList(t.Context(), f)
	if err != nil {
		t.Fatalf("list datasets %+v: %v", f, err)
	}
	return page
}

func lineage(t testing.TB, s db.Store, root string, depth int) db.CatalogGraph {
	t.Helper()
	g, err := s.CatalogLineage(t.Context(), root, depth)
	if err != nil {
		t.Fatalf("lineage from %q: %v", root, err)
	}
	return g
}

// pairs names the edges of a graph src>dst, sorted.
func pairs(edges []db.CatalogEdge) []string {
	out := make([]string, len(edges))
	for i, e := range edges {
		out[i] = e.SrcURI + ">" + e.DstURI
	}
	slices.Sort(out)
	return out
}

func exerciseCatalog(t *testing.T, newURL func(t testing.TB) string, peek Peek) {
	t.Run("RecordAndRead", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		t0 := now()
		recordCatalog(t, s, invocation("r1", t0, observed(csvURI, "csv", 3, peopleSchema), observed(tableURI, "postgres", 3, nil)))
		recordCatalog(t, s, invocation("r2", t0.Add(time.Minute), observed(tableURI, "postgres", 3, peopleSchema), observed(jsonlURI, "jsonl", 3, peopleSchema)))

		page := datasets(t, s, db.CatalogFilter{})
		var uris []string
		for _, d := range page.Datasets {
			uris = append(uris, d.URI)
		}
		// Newest activity first, r2's two in descending id order, then the
		// csv file r1 read.
		want := []string{jsonlURI, tableURI}
		if db.DatasetID(tableURI) > db.DatasetID(jsonlURI) {
			want = []string{tableURI, jsonlURI}
		}
		if want = append(want, csvURI); !reflect.DeepEqual(uris, want) {
			t.Fatalf("datasets %v, want %v", uris, want)
		}
		table := detail(t, s, tableURI)
		if table.ID != db.DatasetID(tableURI) || len(table.ID) != 16 || table.Kind != "postgres" ||
			!reflect.DeepEqual(table.Roles, []string{db.RoleSink, db.RoleSource}) ||
			table.Runs != 2 || table.TotalRecords != 6 || table.LastRecords != 3 || table.LastRunID != "r2" || table.Pipeline != "people" ||
			!table.FirstSeen.Equal(t0) || !table.LastSeen.Equal(t0.Add(time.Minute)) {
			t.Errorf("table dataset = %+v", table.CatalogDataset)
		}
		// The sink of r1 reported no schema; r2's source did.
		if table.SchemaVersions != 1 || len(table.Timeline) != 1 || table.Timeline[0].Diff != nil ||
			!reflect.DeepEqual(table.CurrentSchema, peopleSchema) || table.CurrentSchemaHash == "" || table.Timeline[0].RunID != "r2" {
			t.Errorf("table schema: versions %d, timeline %+v, current %+v", table.SchemaVersions, table.Timeline, table.CurrentSchema)
		}
		wantStats := []db.CatalogStat{
			{RecordedAt: t0.Add(time.Minute), RunID: "r2", RowID: "default", Role: db.RoleSource, Status: db.StatusCompleted, Records: 3, Bytes: ptr(int64(30)), DurationMS: 1500},
			{RecordedAt: t0, RunID: "r1", RowID: "default", Role: db.RoleSink, Status: db.StatusCompleted, Records: 3, Bytes: ptr(int64(30)), DurationMS: 1500},
		}
		if !reflect.DeepEqual(table.Stats, wantStats) {
			t.Errorf("table stats = %+v\nwant %+v", table.Stats, wantStats)
		}
		if pairs(table.Upstream)[0] != csvURI+">"+tableURI || len(table.Upstream) != 1 ||
			len(table.Downstream) != 1 || pairs(table.Downstream)[0] != tableURI+">"+jsonlURI {
			t.Errorf("table edges: up %v, down %v", pairs(table.Upstream), pairs(table.Downstream))
		}
		up := table.Upstream[0]
		if up.SrcID != db.DatasetID(csvURI) || up.DstID != table.ID || up.Runs != 1 || up.LastRecords != 3 || up.LastRunID != "r1" ||
			up.Pipeline != "people" || up.RowID != "default" || !up.FirstSeen.Equal(t0) {
			t.Errorf("upstream edge = %+v", up)
		}
		g := lineage(t, s, "", 0)
		if want := []string{csvURI + ">" + tableURI, tableURI + ">" + jsonlURI}; !reflect.DeepEqual(pairs(g.Edges), want) || g.Truncated {
			t.Errorf("whole graph %v (truncated %v), want %v", pairs(g.Edges), g.Truncated, want)
		}
		if _, err := s.CatalogDatasetGet(t.Context(), "0123456789abcdef"); !errors.Is(err, db.ErrNotFound) {
			t.Errorf("unknown dataset: %v, want ErrNotFound", err)
		}
	})

	t.Run("SchemaVersionOnlyWhenTheSchemaChanges", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		t0 := now()
		v2 := []db.SchemaColumn{{Name: "id", Type: "integer"}, {Name: "email", Type: "string"}, {Name: "name", Type: "string", Nullable: true}}
		v3 := []db.SchemaColumn{{Name: "id", Type: "number"}, {Name: "email", Type: "boolean"}}
		steps := []struct {
			schema  []db.SchemaColumn
			version int
		}{
			{peopleSchema, 1},
			{peopleSchema, 1},
			{nil, 1},
			// The same columns in another order are the same schema.
			{[]db.SchemaColumn{peopleSchema[1], peopleSchema[0]}, 1},
			{v2, 2},
			{v3, 3},
		}
		for i, st := range steps {
			recordCatalog(t, s, invocation(fmt.Sprintf("r%d", i), t0.Add(time.Duration(i)*time.Second), observed(csvURI, "csv", 1, st.schema), observed(jsonlURI, "jsonl", 1, nil)))
			if got := detail(t, s, csvURI).SchemaVersions; got != st.version {
				t.Fatalf("after record %d: %d schema versions, want %d", i, got, st.version)
			}
		}
		d := detail(t, s, csvURI)
		if len(d.Timeline) != 3 || d.Timeline[0].Version != 1 || d.Timeline[2].Version != 3 || d.Timeline[1].RunID != "r4" {
			t.Fatalf("timeline %+v", d.Timeline)
		}
		if d.Timeline[0].Diff != nil {
			t.Errorf("version 1 has a diff: %+v", d.Timeline[0].Diff)
		}
		wantV2 := &db.SchemaDiff{
			Added:   []db.ColumnChange{{Column: "email", To: &v2[1]}},
			Widened: []db.ColumnChange{{Column: "name", From: &peopleSchema[1], To: &v2[2]}},
			Changed: []db.ColumnChange{{Column: "id", From: &peopleSchema[0], To: &v2[0]}},
		}
		if !reflect.DeepEqual(d.Timeline[1].Diff, wantV2) {
			t.Errorf("diff of version 2 = %+v\nwant %+v", d.Timeline[1].Diff, wantV2)
		}
		wantV3 := &db.SchemaDiff{
			Widened: []db.ColumnChange{{Column: "id", From: &v2[0], To: &v3[0]}},
			Changed: []db.ColumnChange{{Column: "email", From: &v2[1], To: &v3[1]}},
			Removed: []string{"name"},
		}
		if !reflect.DeepEqual(d.Timeline[2].Diff, wantV3) {
			t.Errorf("diff of version 3 = %+v\nwant %+v", d.Timeline[2].Diff, wantV3)
		}
		if !reflect.DeepEqual(d.CurrentSchema, v3) || d.CurrentSchemaHash != d.Timeline[2].SchemaHash {
			t.Errorf("current schema %+v (%s), want version 3's", d.CurrentSchema, d.CurrentSchemaHash)
		}
	})

	t.Run("RecordingABatchAgainIsANoOp", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		inv := invocation("r1", now(), observed(csvURI, "csv", 5, peopleSchema), observed(jsonlURI, "jsonl", 5, nil))
		// The invocation twice in a batch, and the batch twice.
		twice := batch(inv, inv)
		for range 2 {
			if err := s.CatalogRecord(t.Context(), twice); err != nil {
				t.Fatal(err)
			}
		}
		d := detail(t, s, csvURI)
		if d.Runs != 1 || d.TotalRecords != 5 || len(d.Stats) != 1 || d.Downstream[0].Runs != 1 {
			t.Errorf("recorded twice: runs %d, total %d, %d stats, edge runs %d", d.Runs, d.TotalRecords, len(d.Stats), d.Downstream[0].Runs)
		}
		wantPermanent(t, "a batch without an id", s.CatalogRecord(t.Context(), db.CatalogBatch{Invocations: []db.CatalogInvocation{inv}}), "an id")
		// Another row of the same run is another invocation.
		inv.RowID = "second"
		recordCatalog(t, s, inv)
		if d := detail(t, s, csvURI); d.Runs != 2 || len(d.Stats) != 2 {
			t.Errorf("a second row: runs %d, %d stats", d.Runs, len(d.Stats))
		}
	})

	t.Run("BatchIDsAreKeptAnHour", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		a := batch(invocation("r1", now(), observed(csvURI, "csv", 5, nil), observed(jsonlURI, "jsonl", 5, nil)))
		record := func(b db.CatalogBatch) {
			t.Helper()
			if err := s.CatalogRecord(t.Context(), b); err != nil {
				t.Fatal(err)
			}
		}
		runs := func() int64 { t.Helper(); return detail(t, s, csvURI).Runs }
		record(a)
		clk.Advance(db.BatchIDsKept - time.Minute)
		record(a)
		if n := runs(); n != 1 {
			t.Fatalf("a retry within the hour: %d runs, want 1", n)
		}
		// A batch written after the hour forgets a's id, which a writes
		// again: what bounds the table of ids.
		clk.Advance(2 * time.Minute)
		record(batch(invocation("r2", now(), observed(csvURI, "csv", 5, nil), observed(jsonlURI, "jsonl", 5, nil))))
		record(a)
		if n := runs(); n != 3 {
			t.Errorf("a's id after the hour: %d runs, want 3", n)
		}
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		t0 := now()
		var uris []string
		for i := range 7 {
			kind := []string{"csv", "postgres"}[i%2]
			uri := fmt.Sprintf("file:///data/Ünïcode/File-%d.%s", i, kind)
			uris = append(uris, uri)
			// Two datasets share each instant, so the id breaks the tie.
			at := t0.Add(time.Duration(i/2) * time.Second)
			recordCatalog(t, s, db.CatalogInvocation{RunID: fmt.Sprintf("r%d", i), Pipeline: "p", RowID: "default", Status: db.StatusCompleted,
				RecordedAt: at, Sinks: []db.CatalogObservation{observed(uri, kind, 1, nil)}})
		}
		var all []string
		cursor := ""
		for {
			page := datasets(t, s, db.CatalogFilter{Limit: 3, Cursor: cursor})
			for _, d := range page.Datasets {
				all = append(all, d.URI)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = *page.NextCursor
		}
		full := datasets(t, s, db.CatalogFilter{}).Datasets
		if len(all) != 7 || len(full) != 7 {
			t.Fatalf("pages hold %d datasets, one page %d, want 7", len(all), len(full))
		}
		for i, d := range full {
			if all[i] != d.URI {
				t.Fatalf("paged order %v differs from one page's at %d", all, i)
			}
			if i > 0 && (full[i-1].LastSeen.Before(d.LastSeen) || (full[i-1].LastSeen.Equal(d.LastSeen) && full[i-1].ID < d.ID)) {
				t.Fatalf("not ordered by (last_seen, id) descending at %d", i)
			}
		}
		if page := datasets(t, s, db.CatalogFilter{Kind: ptr("postgres")}); len(page.Datasets) != 3 {
			t.Errorf("kind postgres: %d datasets, want 3", len(page.Datasets))
		}
		if page := datasets(t, s, db.CatalogFilter{Q: ptr("üNÏCODE/file-3")}); len(page.Datasets) != 1 || page.Datasets[0].URI != uris[3] {
			t.Errorf("q matched %+v, want %s", page.Datasets, uris[3])
		}
		if page := datasets(t, s, db.CatalogFilter{Q: ptr("%"), Kind: ptr("csv")}); len(page.Datasets) != 0 {
			t.Errorf("q %% matched %d datasets: it is a substring, not a pattern", len(page.Datasets))
		}
		_, err := s.CatalogDatasetList(t.Context(), db.CatalogFilter{Cursor: "0000000000000000"})
		if !errors.Is(err, db.ErrUnknownCursor) {
			t.Errorf("unknown cursor: %v, want ErrUnknownCursor", err)
		}
		wantPermanent(t, "an unknown cursor", err, "0000000000000000")
	})

	t.Run("LineageIsABoundedWalk", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		t0 := now()
		chain := []string{"x://a", "x://b", "x://c", "x://d", "x://e"}
		for i := range len(chain) - 1 {
			recordCatalog(t, s, invocation(fmt.Sprintf("chain-%d", i), t0.Add(time.Duration(i)*time.Second), observed(chain[i], "x", 1, nil), observed(chain[i+1], "x", 1, nil)))
		}
		// A cycle back from the end, and a graph of its own beside it.
		recordCatalog(t, s, invocation("cycle", t0, observed("x://e", "x", 1, nil), observed("x://a", "x", 1, nil)))
		recordCatalog(t, s, invocation("other", t0, observed("y://1", "y", 1, nil), observed("y://2", "y", 1, nil)))
		c := db.DatasetID("x://c")
		for depth, want := range map[int][]string{
			1:  {"x://b>x://c", "x://c>x://d"},
			2:  {"x://a>x://b", "x://b>x://c", "x://c>x://d", "x://d>x://e"},
			3:  {"x://a>x://b", "x://b>x://c", "x://c>x://d", "x://d>x://e", "x://e>x://a"},
			32: {"x://a>x://b", "x://b>x://c", "x://c>x://d", "x://d>x://e", "x://e>x://a"},
			99: {"x://a>x://b", "x://b>x://c", "x://c>x://d", "x://d>x://e", "x://e>x://a"},
			0:  {"x://b>x://c", "x://c>x://d"},
		} {
			if got := pairs(lineage(t, s, c, depth).Edges); !reflect.DeepEqual(got, want) {
				t.Errorf("depth %d from c: %v, want %v", depth, got, want)
			}
		}
		if g := lineage(t, s, "", 0); len(g.Edges) != 6 {
			t.Errorf("whole graph: %d edges, want 6", len(g.Edges))
		}
		if g := lineage(t, s, "ffffffffffffffff", 5); len(g.Edges) != 0 || g.Edges == nil {
			t.Errorf("unknown root: %+v, want no edges", g)
		}
		g := lineage(t, s, c, 5).Edges
		for i := 1; i < len(g); i++ {
			if g[i-1].LastSeen.Before(g[i].LastSeen) {
				t.Fatalf("lineage not newest first: %v", pairs(g))
			}
		}
	})

	t.Run("StatsKeepTheNewest", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		s := open(t, url, db.Options{InstanceID: "a"})
		t0 := now()
		extra := 5
		for i := range db.StatsKept + extra {
			recordCatalog(t, s, db.CatalogInvocation{RunID: fmt.Sprintf("r%04d", i), Pipeline: "p", RowID: "default", Status: db.StatusCompleted,
				RecordedAt: t0.Add(time.Duration(i) * time.Millisecond), Sinks: []db.CatalogObservation{observed(jsonlURI, "jsonl", int64(i), nil)}})
		}
		d := detail(t, s, jsonlURI)
		if d.Runs != int64(db.StatsKept+extra) || len(d.Stats) != db.DetailStats || d.Stats[0].RunID != fmt.Sprintf("r%04d", db.StatsKept+extra-1) {
			t.Fatalf("runs %d, %d stats, newest %s", d.Runs, len(d.Stats), d.Stats[0].RunID)
		}
		if kept, stale := peek.CatalogStats(t, url, db.DatasetID(jsonlURI)); kept != db.StatsKept || stale != 0 {
			t.Errorf("%d points kept, %d stale blocks; want %d and none", kept, stale, db.StatsKept)
		}
	})

	t.Run("StatsSurviveTheirMigrations", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		s := open(t, url, db.Options{InstanceID: "a"})
		t0 := now()
		point := func(i int) db.CatalogInvocation {
			return db.CatalogInvocation{RunID: fmt.Sprintf("r%04d", i), Pipeline: "p", RowID: "default", Status: db.StatusCompleted,
				RecordedAt: t0.Add(time.Duration(i) * time.Millisecond), Sinks: []db.CatalogObservation{observed(jsonlURI, "jsonl", int64(i), nil)}}
		}
		// One batch of more points than a dataset keeps: its oldest are
		// never written, and the newest are kept, in order.
		big := batch()
		for i := range db.StatsKept + 7 {
			big.Invocations = append(big.Invocations, point(i))
		}
		if err := s.CatalogRecord(t.Context(), big); err != nil {
			t.Fatal(err)
		}
		newest := func(want int, stage string) {
			t.Helper()
			d := detail(t, s, jsonlURI)
			if kept, stale := peek.CatalogStats(t, url, db.DatasetID(jsonlURI)); kept != db.StatsKept || stale != 0 || len(d.Stats) != db.DetailStats {
				t.Fatalf("%s: %d points kept, %d stale blocks, %d shown", stage, kept, stale, len(d.Stats))
			}
			for i, st := range d.Stats {
				if st.RunID != fmt.Sprintf("r%04d", want-i) {
					t.Fatalf("%s: point %d is %s, want r%04d", stage, i, st.RunID, want-i)
				}
			}
		}
		newest(db.StatsKept+6, "after one batch past what is kept")
		// Down past the ring of slots and the table before it, and up
		// again, keeps the points and their order.
		p := migrator(t, url)
		if _, err := p.DownTo(t.Context(), 9); err != nil {
			t.Fatalf("down to 9: %v", err)
		}
		if _, err := db.MigrateUp(t.Context(), p); err != nil {
			t.Fatalf("up again: %v", err)
		}
		s = open(t, url, db.Options{InstanceID: "b"})
		newest(db.StatsKept+6, "after down and up")
		// A batch holding an invocation twice records it once, and so
		// does the batch retried.
		again := batch(point(db.StatsKept+7), point(db.StatsKept+7))
		for range 2 {
			if err := s.CatalogRecord(t.Context(), again); err != nil {
				t.Fatal(err)
			}
		}
		newest(db.StatsKept+7, "after one more, retried")
		if d := detail(t, s, jsonlURI); d.Runs != int64(db.StatsKept+8) || d.Stats[1].RunID != fmt.Sprintf("r%04d", db.StatsKept+6) {
			t.Errorf("after a retry: runs %d, second newest %s", d.Runs, d.Stats[1].RunID)
		}
	})

	t.Run("ConcurrentRecordersLoseNothing", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		const writers = 20
		ss := make([]db.Store, 4)
		for i := range ss {
			ss[i] = open(t, url, db.Options{InstanceID: fmt.Sprintf("m%d", i)})
		}
		t0 := now()
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				src := fmt.Sprintf("file:///data/part-%02d.csv", i)
				errs <- ss[i%len(ss)].CatalogRecord(t.Context(), batch(invocation(fmt.Sprintf("r%02d", i), t0.Add(time.Duration(i)*time.Millisecond),
					observed(src, "csv", int64(i+1), []db.SchemaColumn{{Name: "id", Type: "string"}}),
					observed(tableURI, "postgres", int64(i+1), []db.SchemaColumn{{Name: "id", Type: "integer", DBType: "bigint"}}))))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent record: %v", err)
			}
		}
		d := detail(t, ss[0], tableURI)
		if d.Runs != writers || d.TotalRecords != writers*(writers+1)/2 || len(d.Upstream) != writers || d.SchemaVersions != 1 {
			t.Errorf("after %d concurrent records: runs %d, total %d, %d upstream edges, %d schema versions",
				writers, d.Runs, d.TotalRecords, len(d.Upstream), d.SchemaVersions)
		}
		if n, _ := peek.CatalogStats(t, url, db.DatasetID(tableURI)); n != writers {
			t.Errorf("%d stats rows, want %d", n, writers)
		}
		// The latest-run fields are the newest record's, whoever wrote last.
		if d.LastRunID != fmt.Sprintf("r%02d", writers-1) || d.LastRecords != writers {
			t.Errorf("last run %s (%d records), want the newest record's", d.LastRunID, d.LastRecords)
		}
	})

	t.Run("OlderRecordsDoNotWinTheLatestFields", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		t0 := now()
		recordCatalog(t, s, invocation("new", t0, observed(csvURI, "csv", 7, nil), observed(jsonlURI, "jsonl", 7, nil)))
		recordCatalog(t, s, invocation("old", t0.Add(-time.Hour), observed(csvURI, "csv", 2, nil), observed(jsonlURI, "jsonl", 2, nil)))
		d := detail(t, s, csvURI)
		if d.LastRunID != "new" || d.LastRecords != 7 || !d.LastSeen.Equal(t0) || !d.FirstSeen.Equal(t0.Add(-time.Hour)) || d.Runs != 2 || d.TotalRecords != 9 {
			t.Errorf("dataset %+v", d.CatalogDataset)
		}
		if e := d.Downstream[0]; e.LastRunID != "new" || e.LastRecords != 7 || e.Runs != 2 {
			t.Errorf("edge %+v", e)
		}
	})

	t.Run("SeveralSourcesOneEdgeEach", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		recordCatalog(t, s, db.CatalogInvocation{RunID: "r1", Pipeline: "p", RowID: "default", Status: db.StatusCompleted,
			Sources: []db.CatalogObservation{observed("x://a", "x", 4, nil), observed("x://b", "x", 3, nil), observed("x://out", "x", 9, nil)},
			Sinks:   []db.CatalogObservation{observed("x://out", "x", 7, nil)}})
		d := detail(t, s, "x://out")
		if got := pairs(d.Upstream); !reflect.DeepEqual(got, []string{"x://a>x://out", "x://b>x://out"}) {
			t.Errorf("upstream %v: one edge per other source, none to itself", got)
		}
		if !reflect.DeepEqual(d.Roles, []string{db.RoleSink, db.RoleSource}) || d.LastRecords != 7 {
			t.Errorf("a dataset read and written: roles %v, records %d (the sink's)", d.Roles, d.LastRecords)
		}
	})

	t.Run("RetentionAndDeletionKeepTheCatalog", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		run := newRun("r1", db.StatusCompleted, clk.Now().Add(-48*time.Hour))
		run.FinishedAt = ptr(clk.Now().Add(-47 * time.Hour))
		submit(t, s, run)
		recordCatalog(t, s, invocation("r1", clk.Now().Add(-47*time.Hour), observed(csvURI, "csv", 1, peopleSchema), observed(jsonlURI, "jsonl", 1, nil)))
		putSnapshots(t, s, db.ConfigSnapshot{Pipeline: "people", RunID: "r1", Body: []byte(`{"a":1}`)})
		purge(t, s, db.PurgePolicy{TerminalRuns: time.Hour, Audit: time.Hour, IdempotencyClaims: time.Hour, Instances: time.Hour})
		if _, err := s.RunGet(t.Context(), "r1"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("the run survived the purge: %v", err)
		}
		d := detail(t, s, csvURI)
		if d.Runs != 1 || len(d.Stats) != 1 || len(d.Timeline) != 1 || len(d.Downstream) != 1 {
			t.Errorf("after the run's purge: %+v", d)
		}
		if _, err := s.ConfigSnapshotGet(t.Context(), "people"); err != nil {
			t.Errorf("snapshot after the purge: %v", err)
		}
		submit(t, s, newRun("r2", db.StatusCompleted, clk.Now()))
		recordCatalog(t, s, invocation("r2", clk.Now(), observed(csvURI, "csv", 1, nil), observed(jsonlURI, "jsonl", 1, nil)))
		if out, err := s.RunDelete(t.Context(), "r2"); err != nil || out != db.Deleted {
			t.Fatalf("delete: %v %v", out, err)
		}
		if d := detail(t, s, csvURI); len(d.Stats) != 2 || d.Stats[0].RunID != "r2" {
			t.Errorf("a deleted run's stats: %+v", d.Stats)
		}
	})

	t.Run("OneBatchIsTheSumOfItsInvocations", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		t0 := now()
		v2 := append(slices.Clone(peopleSchema), db.SchemaColumn{Name: "email", Type: "string"})
		// Out of order, as concurrent runs finish: the batch takes them in
		// the order they finished.
		invs := []db.CatalogInvocation{
			invocation("r3", t0.Add(3*time.Second), observed(csvURI, "csv", 3, v2), observed(jsonlURI, "jsonl", 3, nil)),
			invocation("r1", t0.Add(time.Second), observed(csvURI, "csv", 1, peopleSchema), observed(jsonlURI, "jsonl", 1, nil)),
			invocation("r2", t0.Add(2*time.Second), observed(csvURI, "csv", 2, peopleSchema), observed(tableURI, "postgres", 2, nil)),
		}
		snaps := []db.ConfigSnapshot{
			{Pipeline: "people", RunID: "r3", RecordedAt: t0.Add(3 * time.Second), Body: []byte(`{"v":3}`)},
			{Pipeline: "people", RunID: "r1", RecordedAt: t0.Add(time.Second), Body: []byte(`{"v":1}`)},
			{Pipeline: "people", RunID: "r2", RecordedAt: t0.Add(2 * time.Second), Body: []byte(`{"v":2}`)},
		}
		first := db.CatalogBatch{ID: rand.Text(), Invocations: invs, Snapshots: snaps}
		if err := s.CatalogRecord(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		d := detail(t, s, csvURI)
		if d.Runs != 3 || d.TotalRecords != 6 || d.LastRunID != "r3" || d.LastRecords != 3 || !d.FirstSeen.Equal(t0.Add(time.Second)) || len(d.Stats) != 3 {
			t.Errorf("csv after one batch of three: %+v, %d stats", d.CatalogDataset, len(d.Stats))
		}
		if len(d.Timeline) != 2 || d.Timeline[0].RunID != "r1" || d.Timeline[1].RunID != "r3" || d.Timeline[1].Diff == nil || len(d.Timeline[1].Diff.Added) != 1 {
			t.Errorf("timeline %+v", d.Timeline)
		}
		if e := d.Downstream; len(e) != 2 || pairs(e)[0] != csvURI+">"+jsonlURI || e[0].Runs+e[1].Runs != 3 {
			t.Errorf("edges %+v", e)
		}
		got, err := s.ConfigSnapshotGet(t.Context(), "people")
		if err != nil || got.Latest.RunID != "r3" || got.Previous == nil || got.Previous.RunID != "r2" {
			t.Errorf("snapshots after one batch of three: %+v %v", got, err)
		}
		// The batch again, as a retry after a commit whose answer was lost.
		if err := s.CatalogRecord(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		if d := detail(t, s, csvURI); d.Runs != 3 || len(d.Stats) != 3 || d.SchemaVersions != 2 {
			t.Errorf("after the batch again: runs %d, %d stats, %d versions", d.Runs, len(d.Stats), d.SchemaVersions)
		}
	})

	t.Run("ConfigSnapshots", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		put := func(run string, at time.Time, body string) {
			t.Helper()
			putSnapshots(t, s, db.ConfigSnapshot{Pipeline: "people", RunID: run, RecordedAt: at, Body: []byte(body)})
		}
		get := func() db.ConfigSnapshots {
			t.Helper()
			snaps, err := s.ConfigSnapshotGet(t.Context(), "people")
			if err != nil {
				t.Fatal(err)
			}
			return snaps
		}
		if _, err := s.ConfigSnapshotGet(t.Context(), "people"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("no snapshot yet: %v, want ErrNotFound", err)
		}
		t0 := now()
		put("r1", t0, `{"v":1}`)
		if snaps := get(); snaps.Latest.RunID != "r1" || !snaps.Latest.RecordedAt.Equal(t0) || snaps.Previous != nil {
			t.Fatalf("after one: %+v", snaps)
		}
		put("r2", t0.Add(time.Second), `{"v":2}`)
		put("r2", t0.Add(time.Second), `{"v":2}`)
		put("old", t0.Add(-time.Hour), `{"v":0}`)
		snaps := get()
		if snaps.Latest.RunID != "r2" || snaps.Previous == nil || snaps.Previous.RunID != "r1" || !snaps.Previous.RecordedAt.Equal(t0) {
			t.Fatalf("after r2, r2 again and an older one: %+v", snaps)
		}
		sameJSON(t, "latest body", json.RawMessage(`{"v":2}`), snaps.Latest.Body)
		sameJSON(t, "previous body", json.RawMessage(`{"v":1}`), snaps.Previous.Body)
		err := s.CatalogRecord(t.Context(), db.CatalogBatch{ID: rand.Text(), Snapshots: []db.ConfigSnapshot{{Pipeline: "people", RunID: "r3", Body: []byte(`[1]`)}}})
		wantPermanent(t, "a snapshot that is not an object", err, "r3")
	})

	t.Run("InvalidRecordsArePermanent", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		err := s.CatalogRecord(t.Context(), batch(db.CatalogInvocation{RowID: "default", Sinks: []db.CatalogObservation{observed(jsonlURI, "jsonl", 1, nil)}}))
		wantPermanent(t, "a record without a run id", err, "")
		err = s.CatalogRecord(t.Context(), batch(db.CatalogInvocation{RunID: "r", RowID: "default", Sinks: []db.CatalogObservation{{Kind: "jsonl"}}}))
		wantPermanent(t, "a dataset without a URI", err, "run r")
		if err := s.CatalogRecord(t.Context(), batch(db.CatalogInvocation{RunID: "r", RowID: "default"})); err != nil {
			t.Errorf("an invocation without datasets: %v", err)
		}
	})
}
