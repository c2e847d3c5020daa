package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/logs"
)

// testEngine stands in for the pipeline layer: a config is the number of
// rows to "write"; "hold" keeps the run in flight until cancelled; "gated"
// until gate closes; "stuck" reports 4 records and then ignores cancellation
// until gate closes, like a connector hung in a write; "split:N" asks for N shards of a shardable source whose
// shards write 10 rows each, and "split:N:F" makes shard F fail; "bad" does
// not load.
type testEngine struct {
	// scale multiplies the rows written (0 means 1), so a test can tell
	// which engine, and so which instance, wrote a result.
	scale int64
	// executions counts Execute calls when set.
	executions *atomic.Int64
	gate       chan struct{}
	// writeMode is every sink's write mode; "" means append.
	writeMode string
}

func (e testEngine) Load(config []byte, _ string) (*pipeline.Plan, error) {
	s := string(config)
	switch {
	case s == "bad":
		return nil, errors.New("line 1, column 1: not a pipeline")
	case s == "hold", s == "gated", s == "stuck":
		return &pipeline.Plan{Name: s, Invocations: []pipeline.Invocation{{RowID: s}}}, nil
	case strings.HasPrefix(s, "split:"):
		parts := strings.Split(s, ":")
		n, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, err
		}
		src := pipeline.ConnectorConfig{Type: "split", Config: json.RawMessage("-1")}
		if len(parts) > 2 {
			src.Config = json.RawMessage(parts[2])
		}
		return &pipeline.Plan{Name: "split", Shard: &pipeline.Shard{Count: n}, Invocations: []pipeline.Invocation{{RowID: "split", Source: src}}}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, err
	}
	return &pipeline.Plan{Name: "rows", Invocations: []pipeline.Invocation{{RowID: strconv.Itoa(n)}}}, nil
}

func (e testEngine) Execute(ctx context.Context, _ string, plan *pipeline.Plan, _ *slog.Logger, progress func(int64)) ([]pipeline.InvocationResult, error) {
	if e.executions != nil {
		e.executions.Add(1)
	}
	scale := max(e.scale, 1)
	inv := plan.Invocations[0]
	row := inv.RowID
	switch row {
	case "hold":
		progress(3)
		<-ctx.Done()
		return []pipeline.InvocationResult{{RowID: row, RecordsWritten: 3, Err: ctx.Err()}}, ctx.Err()
	case "stuck":
		progress(4)
		<-e.gate
		return []pipeline.InvocationResult{{RowID: row, RecordsWritten: 4}}, nil
	case "gated":
		select {
		case <-e.gate:
		case <-ctx.Done():
			return []pipeline.InvocationResult{{RowID: row, Err: ctx.Err()}}, ctx.Err()
		}
		return []pipeline.InvocationResult{{RowID: row, RecordsWritten: 5 * scale}}, nil
	case "split":
		if inv.SourceShard == nil {
			return []pipeline.InvocationResult{{RowID: row, RecordsWritten: 1000}}, nil
		}
		var shard, fail int
		if err := json.Unmarshal(inv.SourceShard.Descriptor, &shard); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(inv.Source.Config, &fail); err != nil {
			return nil, err
		}
		if shard == fail {
			err := fmt.Errorf("shard %d broke", shard)
			return []pipeline.InvocationResult{{RowID: row, Err: err}}, err
		}
		return []pipeline.InvocationResult{{RowID: row, RecordsWritten: 10}}, nil
	}
	n, _ := strconv.Atoi(row)
	return []pipeline.InvocationResult{{RowID: row, RecordsWritten: int64(n) * scale}}, nil
}

func (testEngine) Shardable(src pipeline.ConnectorConfig) bool { return src.Type == "split" }

func (testEngine) Shards(_ context.Context, src pipeline.ConnectorConfig, count int) ([]pipeline.SourceShard, error) {
	if src.Type != "split" {
		return nil, errors.New("not shardable")
	}
	out := make([]pipeline.SourceShard, count)
	for i := range out {
		out[i] = pipeline.SourceShard{Descriptor: json.RawMessage(strconv.Itoa(i)), EstimatedRecords: 10}
	}
	return out, nil
}

func (e testEngine) WriteMode(pipeline.ConnectorConfig) string { return cmp.Or(e.writeMode, "append") }

func (testEngine) Probe(context.Context, *pipeline.Plan) (DoctorReport, error) {
	return DoctorReport{Invocations: []DoctorInvocation{{RowID: "x", Checks: []DoctorCheck{{Role: "source", OK: false, Message: "down"}}}}}, nil
}

// faultyStore wraps a real store and fails chosen calls.
type faultyStore struct {
	db.Store
	failGet     atomic.Bool
	failSubmits atomic.Int32 // fail this many RunSubmit calls
	// transient makes the injected submit failures transient.
	transient atomic.Bool
}

func (s *faultyStore) RunGet(ctx context.Context, id string) (*db.RunRecord, error) {
	if s.failGet.Load() {
		return nil, errors.New("injected read failure")
	}
	return s.Store.RunGet(ctx, id)
}

func (s *faultyStore) RunSubmit(ctx context.Context, rec *db.RunRecord, audit *db.AuditEntry) error {
	if s.failSubmits.Add(-1) >= 0 {
		verdict := db.Permanent
		if s.transient.Load() {
			verdict = db.Transient
		}
		return &db.Error{Op: "run submit", Transience: verdict, Err: errors.New("injected write failure")}
	}
	return s.Store.RunSubmit(ctx, rec, audit)
}

func newTestRunner(t *testing.T, cfg Config) (*Runner, *faultyStore) {
	t.Helper()
	return newTestRunnerWith(t, cfg, testEngine{})
}

// newTestRunnerWith is newTestRunner over a given engine.
func newTestRunnerWith(t *testing.T, cfg Config, engine Engine) (*Runner, *faultyStore) {
	t.Helper()
	return newTestRunnerOn(t, cfg, engine, db.Options{})
}

// newTestRunnerOn is newTestRunnerWith over a store opened with opts.
func newTestRunnerOn(t *testing.T, cfg Config, engine Engine, opts db.Options) (*Runner, *faultyStore) {
	t.Helper()
	st, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "h.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	fs := &faultyStore{Store: st}
	hub := logs.NewHub(logs.Options{Store: st, MaxLinesPerRun: 1000})
	r := New(cfg, fs, engine, hub, nil, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
		hub.Close(ctx)
		st.Close()
	})
	return r, fs
}

func await(t *testing.T, st db.Store, id string, want db.RunStatus) *db.RunRecord {
	t.Helper()
	return awaitRun(t, st, id, string(want), func(rec *db.RunRecord) bool { return rec.Status == want })
}

func TestFinalizeWritesTheTerminalRecordWithoutReadingIt(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	fs.failGet.Store(true)
	res, err := r.Submit(context.Background(), SubmitRequest{Config: "7", ConfigFormat: "yaml", Name: ptr("n")})
	if err != nil {
		t.Fatal(err)
	}
	rec := await(t, fs.Store, res.RunID, db.StatusCompleted)
	if rec.RecordsWritten != 7 || rec.FinishedAt == nil || rec.StartedAt == nil || rec.Name == nil || *rec.Name != "n" {
		t.Fatalf("terminal record = %+v", rec)
	}
}

func TestFailedRecordWriteReleasesClaimAndReservation(t *testing.T) {
	r, fs := newTestRunner(t, Config{MaxQueued: 1})
	ctx := context.Background()
	req := SubmitRequest{Config: "3", ConfigFormat: "yaml", IdempotencyKey: ptr("k")}
	fs.failSubmits.Store(1)
	if _, err := r.Submit(ctx, req); err == nil {
		t.Fatal("submit succeeded although its record write failed")
	}
	if q := r.Stats().Queued; q != 0 {
		t.Fatalf("queue holds %d reservations after a failed submit", q)
	}
	res, err := r.Submit(ctx, req)
	if err != nil {
		t.Fatalf("resubmit after the failed write: %v", err)
	}
	if res.Replay {
		t.Fatal("the key still pointed at the run whose record was never written")
	}
	await(t, fs.Store, res.RunID, db.StatusCompleted)
}

func TestEarlyReturnsReleaseTheQueueSlot(t *testing.T) {
	r, fs := newTestRunner(t, Config{MaxQueued: 1, MaxConcurrent: 1})
	ctx := context.Background()
	first, err := r.Submit(ctx, SubmitRequest{Config: "1", ConfigFormat: "yaml", IdempotencyKey: ptr("k")})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, first.RunID, db.StatusCompleted)
	cases := map[string]SubmitRequest{
		"conflict":     {Config: "2", ConfigFormat: "yaml", IdempotencyKey: ptr("k")},
		"replay":       {Config: "1", ConfigFormat: "yaml", IdempotencyKey: ptr("k")},
		"doctor fails": {Config: "1", ConfigFormat: "yaml", DoctorFirst: true},
		"bad config":   {Config: "bad", ConfigFormat: "yaml"},
		"bad clock":    {Config: "1", ConfigFormat: "yaml", Clock: ptr("yesterday")},
	}
	for name, req := range cases {
		res, err := r.Submit(ctx, req)
		switch name {
		case "replay":
			if err != nil || !res.Replay || res.RunID != first.RunID {
				t.Fatalf("replay: %+v %v", res, err)
			}
		case "conflict":
			if !errors.Is(err, ErrIdempotencyConflict) {
				t.Fatalf("conflict: %v", err)
			}
		case "doctor fails":
			var de *DoctorError
			if !errors.As(err, &de) || de.Report.OK {
				t.Fatalf("doctor: %v", err)
			}
		default:
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if q := r.Stats().Queued; q != 0 {
			t.Fatalf("%s left %d reservations", name, q)
		}
	}
	// The single slot is free: a hold run takes it, and the next is 429.
	hold, err := r.Submit(ctx, SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, hold.RunID, db.StatusRunning)
	queued, err := r.Submit(ctx, SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Submit(ctx, SubmitRequest{Config: "1", ConfigFormat: "yaml"}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third submit: %v, want ErrQueueFull", err)
	}
	for _, id := range []string{queued.RunID, hold.RunID} {
		if out, err := r.Cancel(ctx, id); err != nil || out != CancelRequested {
			t.Fatalf("cancel %s: %v %v", id, out, err)
		}
		await(t, fs.Store, id, db.StatusCancelled)
	}
}

func TestConcurrentSubmitsOfOneKeyMakeOneRun(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	const n = 50
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Submit(context.Background(), SubmitRequest{Config: "5", ConfigFormat: "yaml", IdempotencyKey: ptr("same")})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.RunID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("different runs for one key: %v", ids)
		}
	}
	page, err := fs.Store.RunList(context.Background(), db.ListFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 {
		t.Fatalf("%d runs recorded, want 1", len(page.Runs))
	}
}

func TestShutdownFailsQueuedAndStopsRunning(t *testing.T) {
	r, fs := newTestRunner(t, Config{MaxConcurrent: 1})
	ctx := context.Background()
	running, _ := r.Submit(ctx, SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	await(t, fs.Store, running.RunID, db.StatusRunning)
	queued, _ := r.Submit(ctx, SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{running.RunID, queued.RunID} {
		rec := await(t, fs.Store, id, db.StatusFailed)
		if rec.Error == nil || *rec.Error != msgShutdown {
			t.Fatalf("run %s after shutdown: %+v", id, rec)
		}
	}
	if _, err := r.Submit(ctx, SubmitRequest{Config: "1", ConfigFormat: "yaml"}); !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("submit after shutdown: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestSubmittedAtIsWhatTheRecordSays(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	res, err := r.Submit(context.Background(), SubmitRequest{Config: "2", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	rec := await(t, fs.Store, res.RunID, db.StatusCompleted)
	if !rec.SubmittedAt.Equal(res.SubmittedAt) {
		t.Fatalf("submit answered %v, the record says %v", res.SubmittedAt, rec.SubmittedAt)
	}
}

func TestRecordsWrittenIsLiveWhileARunExecutes(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	res, err := r.Submit(context.Background(), SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, res.RunID, db.StatusRunning)
	testwait.Until(t, 30*time.Second, func() error {
		rec, err := r.Get(context.Background(), res.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.RecordsWritten == 3 && rec.ElapsedSecs != nil {
			return nil
		}
		return fmt.Errorf("GET of the running run = %+v, want the 3 acknowledged records", rec)
	})
	if _, err := r.Cancel(context.Background(), res.RunID); err != nil {
		t.Fatal(err)
	}
	if rec := await(t, fs.Store, res.RunID, db.StatusCancelled); rec.RecordsWritten != 3 {
		t.Fatalf("cancelled run = %+v", rec)
	}
}

func TestSubmitWarnings(t *testing.T) {
	cases := []struct {
		name    string
		cluster bool
		mode    string
		plan    *pipeline.Plan
		want    []string
	}{
		{"local run", false, "", &pipeline.Plan{Invocations: []pipeline.Invocation{{}}}, nil},
		{"shard outside a cluster", false, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}}}},
			[]string{"cluster mode only"}},
		{"clustered run into an appending sink", true, "", &pipeline.Plan{Invocations: []pipeline.Invocation{{Sink: pipeline.ConnectorConfig{Type: "jsonl"}}}},
			[]string{"clustered execution is at-least-once", "jsonl (write_mode append)"}},
		{"sharded run", true, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}, Sink: pipeline.ConnectorConfig{Type: "csv"}}}},
			[]string{"sharded execution (4 shards) is at-least-once"}},
		{"sharded matrix", true, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{}, {}}},
			[]string{"2 matrix rows; the run executes whole", "clustered execution is at-least-once"}},
		{"unshardable source", true, "", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "stdin"}}}},
			[]string{"source connector stdin cannot be sharded"}},
		{"clustered run into a keyed sink", true, "upsert", &pipeline.Plan{Invocations: []pipeline.Invocation{{}}}, nil},
		{"clustered run that overwrites", true, "overwrite", &pipeline.Plan{Invocations: []pipeline.Invocation{{}}}, nil},
		{"sharded run that overwrites", true, "overwrite", &pipeline.Plan{Shard: &pipeline.Shard{Count: 4}, Invocations: []pipeline.Invocation{{Source: pipeline.ConnectorConfig{Type: "split"}, Sink: pipeline.ConnectorConfig{Type: "csv"}}}},
			[]string{"sink csv overwrites its target", "the run executes whole"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := New(Config{Cluster: c.cluster}, nil, testEngine{writeMode: c.mode}, nil, nil, nil)
			got := strings.Join(r.warnings(c.plan), "\n")
			if len(c.want) == 0 && got != "" {
				t.Fatalf("warnings %q, want none", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Fatalf("warnings %q lack %q", got, w)
				}
			}
		})
	}
}

func TestATransientRecordWriteFailureIsUnavailable(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	fs.transient.Store(true)
	fs.failSubmits.Store(1)
	_, err := r.Submit(context.Background(), SubmitRequest{Config: "1", ConfigFormat: "yaml"})
	if !errors.Is(err, ErrHistoryUnavailable) || strings.Contains(err.Error(), "injected") {
		t.Fatalf("submit during a database blip: %v, want ErrHistoryUnavailable without the driver's words", err)
	}
	if q := r.Stats().Queued; q != 0 {
		t.Fatalf("the refused submit left %d reservations", q)
	}
}

func TestIdempotencyFingerprintCoversClockAndTimeout(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	ctx := context.Background()
	base := SubmitRequest{Config: "1", ConfigFormat: "yaml", IdempotencyKey: ptr("nightly"), Clock: ptr("2026-01-01T00:00:00Z"), TimeoutSecs: ptr(int64(60))}
	first, err := r.Submit(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, first.RunID, db.StatusCompleted)

	// The same instant written in another zone is the same clock.
	same := base
	same.Clock = ptr("2026-01-01T01:00:00+01:00")
	if res, err := r.Submit(ctx, same); err != nil || !res.Replay || res.RunID != first.RunID {
		t.Fatalf("replay with an equal clock: %+v %v", res, err)
	}
	changes := map[string]func(*SubmitRequest){
		"other clock":   func(q *SubmitRequest) { q.Clock = ptr("2026-01-02T00:00:00Z") },
		"no clock":      func(q *SubmitRequest) { q.Clock = nil },
		"other timeout": func(q *SubmitRequest) { q.TimeoutSecs = ptr(int64(61)) },
		"no timeout":    func(q *SubmitRequest) { q.TimeoutSecs = nil },
	}
	for name, change := range changes {
		req := base
		change(&req)
		if res, err := r.Submit(ctx, req); !errors.Is(err, ErrIdempotencyConflict) {
			t.Fatalf("%s with the same key: %+v %v, want ErrIdempotencyConflict", name, res, err)
		}
	}
}

func TestClockIsRecordedWithAWarningThatItIsNotApplied(t *testing.T) {
	r, fs := newTestRunner(t, Config{})
	ctx := context.Background()
	res, err := r.Submit(ctx, SubmitRequest{Config: "2", ConfigFormat: "yaml", Clock: ptr("2026-03-01T12:00:00+02:00")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "clock 2026-03-01T10:00:00Z is recorded on the run but not applied") {
		t.Fatalf("warnings = %q", res.Warnings)
	}
	rec := await(t, fs.Store, res.RunID, db.StatusCompleted)
	if rec.Clock == nil || *rec.Clock != "2026-03-01T10:00:00Z" || rec.RecordsWritten != 2 {
		t.Fatalf("record = %+v", rec)
	}
	plain, err := r.Submit(ctx, SubmitRequest{Config: "2", ConfigFormat: "yaml"})
	if err != nil || len(plain.Warnings) != 0 {
		t.Fatalf("a submission without clock: %+v %v", plain, err)
	}
}

func TestMaintainPurgesExpiredHistoryButNotUnfinishedRuns(t *testing.T) {
	// skew is how far the store's clock runs ahead of the runner's.
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	r, fs := newTestRunnerOn(t, Config{MaxConcurrent: 1}, testEngine{}, db.Options{Clock: clock})
	ctx := context.Background()
	done, err := r.Submit(ctx, SubmitRequest{Config: "4", ConfigFormat: "yaml", IdempotencyKey: ptr("daily")})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, done.RunID, db.StatusCompleted)
	running, err := r.Submit(ctx, SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	await(t, fs.Store, running.RunID, db.StatusRunning)
	queued, err := r.Submit(ctx, SubmitRequest{Config: "hold", ConfigFormat: "yaml"})
	if err != nil {
		t.Fatal(err)
	}
	// The running run's opening lines reach the store before the purge may
	// take them.
	awaitLogLines(t, fs.Store, running.RunID, func(n int) bool { return n > 0 })
	awaitLogLines(t, fs.Store, done.RunID, func(n int) bool { return n > 0 })

	// A second on, for the store, everything written so far is past a
	// retention of keep; the leases of the unfinished runs still hold.
	const keep = 50 * time.Millisecond
	skew.Store(int64(time.Second))
	mctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		r.Maintain(mctx, Retention{TerminalRuns: keep, IdempotencyClaims: keep, Logs: keep}, 10*time.Millisecond)
	}()
	stopMaintain := func() {
		stop()
		<-stopped
	}
	defer stopMaintain()

	testwait.Until(t, 30*time.Second, func() error {
		if _, err := fs.Store.RunGet(ctx, done.RunID); !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("the finished run outlived its retention: %v", err)
		}
		return nil
	})
	awaitLogLines(t, fs.Store, done.RunID, func(n int) bool { return n == 0 })
	awaitLogLines(t, fs.Store, running.RunID, func(n int) bool { return n == 0 })
	// The claim is gone: the key takes a different payload as a fresh claim.
	claim, err := fs.Store.IdempotencyClaim(ctx, "daily", "another-fingerprint", "another-run", 0)
	if err != nil || claim.Outcome != db.ClaimFresh {
		t.Fatalf("claim of the purged key: %+v %v, want fresh", claim, err)
	}
	for id, want := range map[string]db.RunStatus{running.RunID: db.StatusRunning, queued.RunID: db.StatusQueued} {
		if rec, err := fs.Store.RunGet(ctx, id); err != nil || rec.Status != want {
			t.Fatalf("unfinished run %s after the purge: %+v %v, want %s", id, rec, err, want)
		}
	}
	// Stopped first, so the purge does not take the runs as they finish.
	stopMaintain()
	for _, id := range []string{queued.RunID, running.RunID} {
		if _, err := r.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		await(t, fs.Store, id, db.StatusCancelled)
	}
}

// awaitLogLines polls a run's persisted log lines until ok accepts their count.
func awaitLogLines(t *testing.T, st db.Store, id string, ok func(int) bool) {
	t.Helper()
	testwait.Until(t, 30*time.Second, func() error {
		page, err := st.RunLogList(context.Background(), id, 0, 1000)
		if err == nil && ok(len(page.Lines)) {
			return nil
		}
		return fmt.Errorf("run %s has %d persisted log lines (%v)", id, len(page.Lines), err)
	})
}
