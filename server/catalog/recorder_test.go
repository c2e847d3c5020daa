package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/metrics"
)

func openStore(t *testing.T) db.Store {
	t.Helper()
	s, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "history.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func finished(id, name string) *db.RunRecord {
	at := time.Now().UTC().Truncate(time.Microsecond)
	return &db.RunRecord{RunID: id, Name: &name, Status: db.StatusCompleted, StartedAt: &at, FinishedAt: &at}
}

func lineage(src, dst string, records int64) *pipeline.Lineage {
	schema := &pipeline.Schema{Columns: []pipeline.Column{{Name: "id", Type: "integer"}}}
	return &pipeline.Lineage{
		Source: pipeline.Observation{Records: records, Bytes: 10 * records, Datasets: []pipeline.Dataset{{Kind: "postgres", URI: src, Schema: schema}}},
		Sink:   pipeline.Observation{Records: records, Datasets: []pipeline.Dataset{{Kind: "jsonl", URI: dst, Schema: schema}}},
	}
}

func planOf(secret string) *pipeline.Plan {
	return &pipeline.Plan{
		Name:    "people",
		Secrets: []string{secret},
		Invocations: []pipeline.Invocation{{
			RowID:  "default",
			Source: pipeline.ConnectorConfig{Type: "postgres", Config: json.RawMessage(`{"url":"postgres://u:` + secret + `@h/db","table":"t"}`)},
			Sink:   pipeline.ConnectorConfig{Type: "jsonl", Config: json.RawMessage(`{"path":"/out.jsonl"}`)},
		}},
	}
}

// TestRecordKeepsNoSecret: a URI that carries the run's secret or a
// password, as a connector built without the SDK might report it, reaches
// the catalog without either; the snapshot holds none.
func TestRecordKeepsNoSecret(t *testing.T) {
	s := openStore(t)
	m := metrics.New()
	r := started(t, Config{Store: s, Metrics: m, Secrets: []string{"api-token"}})
	const secret = "s3cr3t-pw"
	results := []pipeline.InvocationResult{
		{RowID: "default", Duration: time.Second, Lineage: lineage("postgres://u:"+secret+"@h:5432/db/public.t?key="+secret, "file:///out-api-token.jsonl", 4)},
		// A failed invocation is not recorded.
		{RowID: "other", Err: context.Canceled, Lineage: lineage("postgres://h/db/public.x", "file:///x.jsonl", 1)},
	}
	r.Record(context.Background(), finished("r1", "people"), planOf(secret), results)
	stop(t, r)
	page, err := s.CatalogDatasetList(context.Background(), db.CatalogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Datasets) != 2 {
		t.Fatalf("datasets %+v, want the two of the row that succeeded", page.Datasets)
	}
	for _, d := range page.Datasets {
		if strings.Contains(d.URI, secret) || strings.Contains(d.URI, "api-token") || strings.Contains(d.URI, "u:") {
			t.Errorf("dataset URI %s keeps a secret", d.URI)
		}
	}
	snaps, err := s.ConfigSnapshotGet(context.Background(), "people")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(snaps.Latest.Body, []byte(secret)) || snaps.Latest.RunID != "r1" {
		t.Errorf("snapshot %s of run %s", snaps.Latest.Body, snaps.Latest.RunID)
	}
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("lineage", "ok")); got != 1 {
		t.Errorf("lineage writes counted %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("snapshot", "ok")); got != 1 {
		t.Errorf("snapshot writes counted %v, want 1", got)
	}
}

// TestRepeatedURIsStayClean: the runs without secrets of their own share
// the cleaned URIs (uriCleaner's cache); the second run's, read from it,
// carries no token or password either, and names the same dataset, while
// a run with a secret of its own masks it though its URI was seen before.
func TestRepeatedURIsStayClean(t *testing.T) {
	s := openStore(t)
	r := started(t, Config{Store: s, Secrets: []string{"api-token"}})
	const raw = "postgres://u:pw@h:5432/db/public.t?key=api-token"
	plain := planOf("unused")
	plain.Secrets = nil
	for _, id := range []string{"r1", "r2"} {
		r.Record(context.Background(), finished(id, "people"), plain, []pipeline.InvocationResult{
			{RowID: "default", Duration: time.Second, Lineage: lineage(raw, "file:///out.jsonl", 1)},
		})
	}
	// A run whose own secret is in a URI the cache already holds.
	r.Record(context.Background(), finished("r3", "people"), planOf("own-s3cret"), []pipeline.InvocationResult{
		{RowID: "default", Duration: time.Second, Lineage: lineage(raw+"&own-s3cret", "file:///out.jsonl", 1)},
	})
	stop(t, r)
	page, err := s.CatalogDatasetList(context.Background(), db.CatalogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int64{}
	for _, d := range page.Datasets {
		if strings.Contains(d.URI, "api-token") || strings.Contains(d.URI, "pw@") || strings.Contains(d.URI, "own-s3cret") {
			t.Errorf("dataset URI %s keeps a secret", d.URI)
		}
		runs[d.URI] = d.Runs
	}
	if len(page.Datasets) != 3 || runs["file:///out.jsonl"] != 3 {
		t.Fatalf("datasets %v, want the table twice as one, the other table, and the file", runs)
	}
}

// TestAFailedWriteIsLoggedAndCounted: a catalog that cannot be written
// costs the catalog its record, which the log and the metric say, and
// returns within the budget.
func TestAFailedWriteIsLoggedAndCounted(t *testing.T) {
	s := openStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	m := metrics.New()
	r := started(t, Config{Store: s, Metrics: m, Log: slog.New(&lockedHandler{h: slog.NewTextHandler(&logged, nil)}), Budget: time.Second})
	r.Record(context.Background(), finished("r1", "people"), planOf("pw"), []pipeline.InvocationResult{{RowID: "default", Lineage: lineage("x://a", "x://b", 1)}})
	stop(t, r)
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("lineage", "failed")); got != 1 {
		t.Errorf("failed lineage writes counted %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("snapshot", "failed")); got != 1 {
		t.Errorf("failed snapshot writes counted %v, want 1", got)
	}
	if !strings.Contains(logged.String(), "the runs are unaffected") || !strings.Contains(logged.String(), "r1") {
		t.Errorf("log:\n%s", logged.String())
	}
}

// TestShardsMergeIntoOneRecord: the lineage the completed shards kept adds
// up to one invocation: counts summed, each dataset once, the schemas of
// their samples united.
func TestShardsMergeIntoOneRecord(t *testing.T) {
	s := openStore(t)
	r := started(t, Config{Store: s})
	run := finished("r1", "people")
	run.Status = db.StatusSharded
	if err := s.RunSubmit(context.Background(), run, nil); err != nil {
		t.Fatal(err)
	}
	shards := make([]db.ShardInsert, 3)
	for i := range shards {
		shards[i] = db.ShardInsert{ShardID: []string{"s0", "s1", "s2"}[i], Descriptor: json.RawMessage(`{}`)}
	}
	if ok, err := s.RunShard(context.Background(), "r1", shards); err != nil || !ok {
		t.Fatalf("shard: %v %v", ok, err)
	}
	claimed, err := s.ShardClaim(context.Background(), 3)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	samples := [][]pipeline.Column{
		{{Name: "id", Type: "integer"}, {Name: "name", Type: "string"}},
		{{Name: "id", Type: "number"}, {Name: "name", Type: "string", Nullable: true}},
		{{Name: "id", Type: "integer"}, {Name: "extra", Type: "boolean"}},
	}
	for i, sh := range claimed {
		l := lineage("file:///in.csv", "postgres://h/db/public.t", int64(10*(i+1)))
		l.Source.Datasets[0].Schema = &pipeline.Schema{Columns: samples[i]}
		res := db.ShardResult{Status: db.ShardCompleted, RecordsWritten: int64(10 * (i + 1)), Lineage: r.ShardLineage([]pipeline.InvocationResult{{RowID: "default", Lineage: l}})}
		if ok, err := s.ShardFinalize(context.Background(), "r1", sh.ShardID, res); err != nil || !ok {
			t.Fatalf("finalize %s: %v %v", sh.ShardID, ok, err)
		}
	}
	r.RecordSharded(context.Background(), finished("r1", "people"), planOf("pw"))
	stop(t, r)
	src, err := s.CatalogDatasetGet(context.Background(), db.DatasetID("file:///in.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := []db.SchemaColumn{{Name: "id", Type: "number"}, {Name: "name", Type: "string", Nullable: true}, {Name: "extra", Type: "boolean", Nullable: true}}
	if src.Runs != 1 || src.TotalRecords != 60 || len(src.Stats) != 1 || !equalColumns(src.CurrentSchema, want) {
		t.Errorf("the sharded run's source: runs %d, records %d, %d stats, schema %+v", src.Runs, src.TotalRecords, len(src.Stats), src.CurrentSchema)
	}
	if len(src.Downstream) != 1 || src.Downstream[0].LastRecords != 60 {
		t.Errorf("edge %+v", src.Downstream)
	}
}

// started is a started Recorder, stopped when the test ends.
func started(t *testing.T, cfg Config) *Recorder {
	t.Helper()
	r := New(cfg)
	r.Start()
	t.Cleanup(func() { stop(t, r) })
	return r
}

// stop writes what r has queued and stops it.
func stop(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.Stop(ctx)
	if ctx.Err() != nil {
		t.Fatal("the recorder did not stop")
	}
}

// TestABurstSharesWrites: the records of runs that finish together are
// written together, and every one of them lands.
func TestABurstSharesWrites(t *testing.T) {
	s := openStore(t)
	m := metrics.New()
	r := New(Config{Store: s, Metrics: m})
	const runs = 300
	for i := range runs {
		run := finished(fmt.Sprintf("r%03d", i), "people")
		r.Record(context.Background(), run, planOf("pw"), []pipeline.InvocationResult{{RowID: "default", Lineage: lineage("x://src", "x://dst", 1)}})
	}
	// Queued before the writer starts: it takes them in batches.
	r.Start()
	stop(t, r)
	d, err := s.CatalogDatasetGet(context.Background(), db.DatasetID("x://dst"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Runs != runs || d.TotalRecords != runs || len(d.Upstream) != 1 || d.Upstream[0].Runs != runs {
		t.Errorf("after %d runs: %d runs, %d records, upstream %+v", runs, d.Runs, d.TotalRecords, d.Upstream)
	}
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("lineage", "ok")); got != runs {
		t.Errorf("lineage writes counted %v, want %d", got, runs)
	}
	snaps, err := s.ConfigSnapshotGet(context.Background(), "people")
	if err != nil || snaps.Latest.RunID != fmt.Sprintf("r%03d", runs-1) || snaps.Previous == nil || snaps.Previous.RunID != fmt.Sprintf("r%03d", runs-2) {
		t.Errorf("snapshots: %+v %v", snaps, err)
	}
}

// countingStore is a store that tells each batch's invocations, in order.
type countingStore struct {
	Store
	mu      sync.Mutex
	batches []int
}

func (c *countingStore) CatalogRecord(ctx context.Context, b db.CatalogBatch) error {
	c.mu.Lock()
	c.batches = append(c.batches, len(b.Invocations))
	c.mu.Unlock()
	return c.Store.CatalogRecord(ctx, b)
}

func (c *countingStore) written() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.batches)
}

// TestABusyServerBatchesAcrossLulls: while runs are still executing, a
// batch waits for their records across lulls longer than lingerGap; once
// none is, a lull ends the batch. Linger is a minute, so only these rules
// can end a batch here.
func TestABusyServerBatchesAcrossLulls(t *testing.T) {
	s := &countingStore{Store: openStore(t)}
	var busy atomic.Bool
	busy.Store(true)
	r := started(t, Config{Store: s, Linger: time.Minute, Busy: busy.Load})
	record := func(id string) {
		r.Record(context.Background(), finished(id, "people"), planOf("pw"), []pipeline.InvocationResult{{RowID: "default", Lineage: lineage("x://src", "x://dst", 1)}})
	}
	record("r1")
	time.Sleep(10 * lingerGap)
	record("r2")
	time.Sleep(10 * lingerGap)
	if got := s.written(); len(got) != 0 {
		t.Fatalf("batches written while runs execute: %v", got)
	}
	busy.Store(false)
	testwait.Until(t, 10*time.Second, func() error {
		if got := s.written(); !slices.Equal(got, []int{2}) {
			return fmt.Errorf("batches %v, want one of 2", got)
		}
		return nil
	})
	// Idle: a lone run is written on its own, without waiting for Linger.
	record("r3")
	testwait.Until(t, 10*time.Second, func() error {
		if got := s.written(); !slices.Equal(got, []int{2, 1}) {
			return fmt.Errorf("batches %v, want 2 then 1", got)
		}
		return nil
	})
}

// TestAFullQueueDropsRecords: a recorder whose writer cannot keep up drops
// what does not fit, counted failed, instead of holding up the runs.
func TestAFullQueueDropsRecords(t *testing.T) {
	m := metrics.New()
	r := New(Config{Store: openStore(t), Metrics: m, Queue: 2})
	for i := range 5 {
		r.Record(context.Background(), finished(fmt.Sprintf("r%d", i), "people"), planOf("pw"), []pipeline.InvocationResult{{RowID: "default", Lineage: lineage("x://a", "x://b", 1)}})
	}
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("lineage", "failed")); got != 3 {
		t.Errorf("dropped lineage writes counted %v, want 3", got)
	}
	r.Start()
	stop(t, r)
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("lineage", "ok")); got != 2 {
		t.Errorf("lineage writes counted %v, want the 2 queued", got)
	}
}

// lockedHandler serializes a handler's writes to a buffer the test reads.
type lockedHandler struct {
	mu sync.Mutex
	h  slog.Handler
}

func (l *lockedHandler) Enabled(ctx context.Context, lvl slog.Level) bool {
	return l.h.Enabled(ctx, lvl)
}
func (l *lockedHandler) Handle(ctx context.Context, rec slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.h.Handle(ctx, rec)
}
func (l *lockedHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &lockedHandler{h: l.h.WithAttrs(a)}
}
func (l *lockedHandler) WithGroup(g string) slog.Handler { return &lockedHandler{h: l.h.WithGroup(g)} }

func equalColumns(a, b []db.SchemaColumn) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
