// Command generate writes the fixtures of the history upgrade test: for each
// dialect, a run history built with schema version 1 by the write path of
// the revision it runs at (history.json, every row of every table), and what
// that revision's HTTP API answers when it reads it back (golden.json: every
// GET /v1/runs/{id}, list page, log page and audit page, with its status,
// content type and body).
//
// It drives the db.Store methods the way faucet serve does (submit with its
// audit entry and idempotency claim, start, log flushes, finish; cluster
// claims, progress, hand-backs, reclaims, poison, shards and the sharded
// sweep), so the history holds what a real server writes. See ../README.md
// for the revision it belongs to and how to run it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/historytest"
	_ "github.com/faucet-dev/faucet/db/postgres"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/server/api"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/runlog"
	"github.com/faucet-dev/faucet/server/runner"
)

func main() {
	out := flag.String("out", filepath.Join("server", "api", "testdata", "upgrade"), "directory to write <dialect>/history.json and <dialect>/golden.json into")
	flag.Parse()
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "faucet-upgrade-fixture-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := generate(ctx, "sqlite:"+filepath.Join(dir, "history.db"), filepath.Join(*out, "sqlite")); err != nil {
		log.Fatalf("sqlite: %v", err)
	}

	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		log.Fatal("TEST_DATABASE_URL is not set: run under go run ./internal/testpg/withpg")
	}
	pgURL, drop, err := createDatabase(ctx, base)
	if err != nil {
		log.Fatal(err)
	}
	defer drop()
	if err := generate(ctx, pgURL, filepath.Join(*out, "postgres")); err != nil {
		log.Fatalf("postgres: %v", err)
	}
}

// generate builds the history at url and writes its fixture and goldens to dir.
func generate(ctx context.Context, url, dir string) error {
	h, err := build(ctx, url)
	if err != nil {
		return err
	}
	defer h.close()
	goldens, err := capture(h)
	if err != nil {
		return err
	}
	f, err := historytest.Dump(ctx, url)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := f.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "history.json"), b, 0o644); err != nil {
		return err
	}
	g, err := json.MarshalIndent(goldens, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "golden.json"), append(g, '\n'), 0o644)
}

// history is a store (and its peers) with the runs written into it.
type history struct {
	url     string
	stores  map[string]db.Store
	runs    []string
	logged  []string
	names   []string
	windows [][2]time.Time
}

func (h *history) close() {
	for _, s := range h.stores {
		_ = s.Close()
	}
}

// open opens (once) the store of one instance.
func (h *history) open(ctx context.Context, instance string, lease time.Duration) (db.Store, error) {
	if s, ok := h.stores[instance]; ok {
		return s, nil
	}
	s, err := db.Open(ctx, h.url, db.Options{InstanceID: instance, LeaseTTL: lease})
	if err != nil {
		return nil, err
	}
	h.stores[instance] = s
	return s, nil
}

func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func ptr[T any](v T) *T { return &v }

// lines makes n log lines numbered from base+1, as a run's capture does.
func lines(base int64, n int, what string) []db.RunLogLine {
	out := make([]db.RunLogLine, n)
	for i := range out {
		level := "info"
		if i == n-1 && strings.Contains(what, "fail") {
			level = "error"
		}
		out[i] = db.RunLogLine{Seq: base + int64(i) + 1, TS: time.Now().UTC(), Level: level, Line: fmt.Sprintf("%s: line %d", what, i+1)}
	}
	return out
}

// submission is a submit as the runner writes it: the record, its audit
// entry and, with a key, the idempotency claim made first.
type submission struct {
	name      string
	labels    map[string]string
	key       string
	status    db.RunStatus
	doctor    bool
	extras    bool
	principal string
}

func (h *history) submit(ctx context.Context, s db.Store, sub submission) (*db.RunRecord, error) {
	runID := uuid.Must(uuid.NewV7()).String()
	fp := "sha256:" + strings.Repeat(fmt.Sprintf("%x", len(sub.name)), 8)
	if sub.key != "" {
		c, err := s.IdempotencyClaim(ctx, sub.key, fp+"/request", runID, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		if c.Outcome != db.ClaimFresh {
			return nil, fmt.Errorf("claim %s: %v", sub.key, c.Outcome)
		}
	}
	rec := &db.RunRecord{
		RunID:        runID,
		Name:         ptr(sub.name),
		Labels:       sub.labels,
		Status:       sub.status,
		SubmittedAt:  micro(time.Now()),
		Invocations:  []db.InvocationRecord{},
		ConfigFormat: ptr("yaml"),
	}
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	if sub.key != "" {
		rec.IdempotencyKey = ptr(sub.key)
	}
	if sub.doctor {
		rec.DoctorReport = json.RawMessage(`{"ok":true,"invocations":[{"row_id":"default","checks":[{"role":"source","connector":"generate","name":"check","ok":true,"duration_ms":3},{"role":"sink","connector":"jsonl","name":"check","ok":true,"message":"writable","duration_ms":1}]}]}`)
	}
	if sub.extras {
		rec.TimeoutSecs = ptr(int64(600))
		rec.Clock = ptr("2025-01-02T03:04:05Z")
		rec.Concurrency = ptr(2)
		rec.Callback = json.RawMessage(`{"url":"https://hooks.example.com/faucet","method":"POST","headers":{"X-Team":"data"},"on":["completed","failed"]}`)
	}
	if sub.status == db.StatusPending {
		rec.ConfigBody = ptr("version: 1\nname: " + sub.name + "\npipeline:\n  source: {type: generate, config: {count: 10}}\n  sink: {type: jsonl, config: {path: /tmp/" + sub.name + ".jsonl}}\n")
	}
	principal := sub.principal
	if principal == "" {
		principal = "ops"
	}
	audit := &db.AuditEntry{
		ID: uuid.Must(uuid.NewV7()).String(), Timestamp: time.Now().UTC(), Principal: principal, Role: "operator",
		Action: "run.submit", RunID: ptr(runID), ConfigFingerprint: ptr(fp), SourceIP: ptr("10.1.2.3"), Result: "ok",
	}
	if err := s.RunSubmit(ctx, rec, audit); err != nil {
		return nil, err
	}
	h.runs = append(h.runs, runID)
	h.names = append(h.names, sub.name)
	return rec, nil
}

// start is the local queue's start: a narrow update, then the record the
// runner holds from then on.
func start(ctx context.Context, s db.Store, rec *db.RunRecord) (*db.RunRecord, error) {
	started := micro(time.Now())
	ok, err := s.RunStart(ctx, rec.RunID, started)
	if err != nil || !ok {
		return nil, fmt.Errorf("start %s: %v %v", rec.RunID, ok, err)
	}
	running := *rec
	running.Status, running.StartedAt = db.StatusRunning, &started
	return &running, nil
}

// outcome is how the engine ended a run.
type outcome struct {
	status  db.RunStatus
	records int64
	invs    []db.InvocationRecord
	err     *string
}

// finish is the runner's finalize: the terminal record (finished now, with
// the elapsed time the runner measures) and the lines not persisted yet.
func (h *history) finish(ctx context.Context, s db.Store, rec *db.RunRecord, o outcome, owned bool, pending []db.RunLogLine) error {
	done := *rec
	now := time.Now().UTC()
	done.Status, done.FinishedAt = o.status, &now
	if done.StartedAt != nil {
		secs := now.Sub(*done.StartedAt).Seconds()
		done.ElapsedSecs = &secs
	}
	done.RecordsWritten, done.Invocations, done.Error = o.records, o.invs, o.err
	if done.Invocations == nil {
		done.Invocations = []db.InvocationRecord{}
	}
	won, err := s.RunFinish(ctx, db.RunFinal{Record: &done, Owned: owned, Lines: pending, MaxLinesPerRun: 100_000})
	if err != nil || !won {
		return fmt.Errorf("finish %s: %v %v", rec.RunID, won, err)
	}
	if len(pending) > 0 {
		h.logged = append(h.logged, rec.RunID)
	}
	return nil
}

func (h *history) appendLogs(ctx context.Context, s db.Store, runID string, l []db.RunLogLine, maxLines int) error {
	h.logged = append(h.logged, runID)
	return s.RunLogAppend(ctx, runID, l, maxLines)
}

// build writes the history: local runs in every status, cluster runs through
// claims, hand-backs, reclaims and poison, sharded runs in flight and
// finished, idempotency claims, logs (one run truncated), audit entries and
// two members.
func build(ctx context.Context, url string) (h *history, err error) {
	h = &history{url: url, stores: map[string]db.Store{}}
	local, err := h.open(ctx, "local", time.Hour)
	if err != nil {
		return nil, err
	}
	m1, err := h.open(ctx, "m1", time.Hour)
	if err != nil {
		return nil, err
	}
	m2, err := h.open(ctx, "m2", time.Hour)
	if err != nil {
		return nil, err
	}
	dying, err := h.open(ctx, "dying", 150*time.Millisecond)
	if err != nil {
		return nil, err
	}
	windowStart := time.Now().UTC()
	step := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	must := func(rec *db.RunRecord, err error) *db.RunRecord {
		step(err)
		return rec
	}

	// Local runs (faucet serve without --cluster).
	must(h.submit(ctx, local, submission{name: "queued-orders", labels: map[string]string{"team": "data"}, key: "idem-queued", status: db.StatusQueued, doctor: true, extras: true}))

	running := must(h.submit(ctx, local, submission{name: "orders", labels: map[string]string{"team": "data", "env": "prod"}, status: db.StatusQueued}))
	running = must(start(ctx, local, running))
	step(h.appendLogs(ctx, local, running.RunID, lines(0, 3, "running orders"), 100_000))

	for i, o := range []outcome{
		{status: db.StatusCompleted, records: 4200, invs: []db.InvocationRecord{
			{RowID: "orders", RecordsWritten: 4000, DurationMS: 1834},
			{RowID: "archive", ParentRecordKey: ptr("k-7"), RecordsWritten: 200, DurationMS: 95},
		}},
		{status: db.StatusFailed, records: 10, err: ptr("1 of 2 invocation(s) failed: archive: sink refused the batch"), invs: []db.InvocationRecord{
			{RowID: "orders", RecordsWritten: 10, DurationMS: 12},
			{RowID: "archive", DurationMS: 3, Error: ptr("sink refused the batch")},
		}},
		{status: db.StatusCancelled, records: 5, invs: []db.InvocationRecord{{RowID: "default", RecordsWritten: 5, DurationMS: 40}}},
	} {
		rec := must(h.submit(ctx, local, submission{name: "orders", labels: map[string]string{"run": fmt.Sprint(i)}, key: fmt.Sprintf("idem-%d", i), status: db.StatusQueued, extras: i == 0}))
		rec = must(start(ctx, local, rec))
		step(h.appendLogs(ctx, local, rec.RunID, lines(0, 2, "orders "+string(o.status)), 100_000))
		step(h.finish(ctx, local, rec, o, false, lines(2, 2, "orders "+string(o.status))))
	}

	// Cancelled while queued: never started.
	queuedCancel := must(h.submit(ctx, local, submission{name: "nightly", status: db.StatusQueued}))
	step(h.finish(ctx, local, queuedCancel, outcome{status: db.StatusCancelled}, false, lines(0, 1, "cancelled before it started")))

	// A long run whose log outgrew the per-run cap of 5 lines.
	long := must(h.submit(ctx, local, submission{name: "backfill", status: db.StatusQueued}))
	long = must(start(ctx, local, long))
	step(h.appendLogs(ctx, local, long.RunID, lines(0, 6, "backfill"), 5))
	step(h.appendLogs(ctx, local, long.RunID, lines(6, 4, "backfill"), 5))
	step(h.finish(ctx, local, long, outcome{status: db.StatusCompleted, records: 1_000_000, invs: []db.InvocationRecord{{RowID: "default", RecordsWritten: 1_000_000, DurationMS: 61_000}}}, false, nil))

	// A run the crash recovery of an exclusive server failed: what Recover
	// writes for a run left running.
	crashed := must(h.submit(ctx, local, submission{name: "crashed", status: db.StatusQueued}))
	crashed = must(start(ctx, local, crashed))
	{
		rec := *crashed
		now := time.Now().UTC()
		rec.Status, rec.FinishedAt, rec.Error = db.StatusFailed, &now, ptr("faucet serve stopped before the run finished (recovered as failed at the next start)")
		secs := now.Sub(*rec.StartedAt).Seconds()
		rec.ElapsedSecs = &secs
		step(local.RunUpsert(ctx, &rec))
	}

	// A run whose owner stopped renewing its lease, failed by recovery.
	orphan := must(h.submit(ctx, dying, submission{name: "orphan", status: db.StatusQueued}))
	must(start(ctx, dying, orphan))
	time.Sleep(300 * time.Millisecond)
	if n, err := local.RunRecoverOrphans(ctx); err != nil || n != 1 {
		return nil, fmt.Errorf("recover orphans: %d, %v", n, err)
	}

	// Cluster runs (faucet serve --cluster). Each claim takes one run, the
	// oldest pending, so the runs that stay pending are submitted last.
	claim := func(s db.Store, runID string) *db.RunRecord {
		got, err := s.RunClaimPending(ctx, 1)
		step(err)
		if len(got) != 1 || got[0].RunID != runID {
			panic(fmt.Sprintf("claim of %s took %v", runID, got))
		}
		return &got[0]
	}
	base := func(attempt int) int64 { return int64(attempt) << 32 }

	// Claimed by m1 and executing, with live progress; another with a
	// cancel request its owner has not acted on yet.
	exec := must(h.submit(ctx, m2, submission{name: "cluster-exec", status: db.StatusPending, principal: "ci-bot"}))
	claim(m1, exec.RunID)
	step(h.appendLogs(ctx, m1, exec.RunID, lines(base(0), 2, "run claimed by instance m1"), 100_000))
	if n, err := m1.RunSetProgress(ctx, map[string]int64{exec.RunID: 1234}); err != nil || n != 1 {
		return nil, fmt.Errorf("set progress: %d %v", n, err)
	}
	cancelled := must(h.submit(ctx, m2, submission{name: "cluster-cancel", status: db.StatusPending}))
	claim(m1, cancelled.RunID)
	if ok, err := m2.RunRequestCancel(ctx, cancelled.RunID); err != nil || !ok {
		return nil, fmt.Errorf("request cancel: %v %v", ok, err)
	}

	// Handed back at shutdown, then claimed by a peer and finished there.
	handed := must(h.submit(ctx, m1, submission{name: "cluster-handback", key: "idem-handback", status: db.StatusPending}))
	claim(m1, handed.RunID)
	step(h.appendLogs(ctx, m1, handed.RunID, lines(base(0), 1, "instance m1 is shutting down"), 100_000))
	if ok, err := m1.RunRelease(ctx, handed.RunID); err != nil || !ok {
		return nil, fmt.Errorf("release: %v %v", ok, err)
	}
	again := claim(m2, handed.RunID)
	step(h.finish(ctx, m2, again, outcome{status: db.StatusCompleted, records: 10, invs: []db.InvocationRecord{{RowID: "default", RecordsWritten: 10, DurationMS: 7}}}, true, lines(base(again.Attempt), 2, "run claimed by instance m2")))

	// Sharded runs: one finished by the sweep, one failed by its last
	// shard's worker, one cancelled, one in flight.
	shardSet := func(n int) []db.ShardInsert {
		out := make([]db.ShardInsert, n)
		for i := range out {
			out[i] = db.ShardInsert{ShardID: fmt.Sprintf("%05d", i), Descriptor: json.RawMessage(fmt.Sprintf(`{"path":"/data/part-%d.csv","offset":%d}`, i, i*1024))}
			if i != n-1 {
				out[i].SizeEstimate = ptr(int64(1000 * (n - i)))
			}
		}
		return out
	}
	shardBase := func(i int) int64 { return int64(i+1) << 40 }
	splitRun := func(name string, n int) *db.RunRecord {
		rec := must(h.submit(ctx, m2, submission{name: name, status: db.StatusPending}))
		claim(m1, rec.RunID)
		if ok, err := m1.RunShard(ctx, rec.RunID, shardSet(n)); err != nil || !ok {
			panic(fmt.Sprintf("shard %s: %v %v", rec.RunID, ok, err))
		}
		step(h.appendLogs(ctx, m1, rec.RunID, lines(base(0), 1, fmt.Sprintf("run split into %d shards", n)), 100_000))
		return rec
	}
	// runShards claims up to n shards for s and finishes them with status.
	runShards := func(s db.Store, n int, status func(i int) db.ShardStatus) {
		got, err := s.ShardClaim(ctx, n)
		step(err)
		for _, sh := range got {
			var i int
			if _, err := fmt.Sscanf(sh.ShardID, "%d", &i); err != nil {
				panic(err)
			}
			res := db.ShardResult{Status: status(i), RecordsWritten: int64(100 * (i + 1))}
			if res.Status == db.ShardFailed {
				res.Error = ptr("sink refused the batch")
			}
			step(h.appendLogs(ctx, s, sh.RunID, lines(shardBase(i), 2, "shard "+sh.ShardID), 100_000))
			if ok, err := s.ShardFinalize(ctx, sh.RunID, sh.ShardID, res); err != nil || !ok {
				panic(fmt.Sprintf("finalize shard: %v %v", ok, err))
			}
		}
	}
	completed := func(int) db.ShardStatus { return db.ShardCompleted }

	splitRun("sharded-swept", 3)
	runShards(m2, 3, completed)
	if ids, err := m1.ShardFinalizeCompletedParents(ctx); err != nil || len(ids) != 1 {
		return nil, fmt.Errorf("sweep: %v %v", ids, err)
	}

	failedParent := splitRun("sharded-failed", 2)
	runShards(m2, 2, func(i int) db.ShardStatus {
		if i == 1 {
			return db.ShardFailed
		}
		return db.ShardCompleted
	})
	if ok, err := m2.RunFinalizeShardedParent(ctx, failedParent.RunID, db.StatusFailed, time.Now().UTC(), ptr("1/2 shard(s) failed")); err != nil || !ok {
		return nil, fmt.Errorf("finalize sharded parent: %v %v", ok, err)
	}

	cancelledParent := splitRun("sharded-cancelled", 3)
	if ok, err := m2.RunRequestCancel(ctx, cancelledParent.RunID); err != nil || !ok {
		return nil, fmt.Errorf("cancel sharded: %v %v", ok, err)
	}
	if ids, err := m2.ShardFinalizeCompletedParents(ctx); err != nil || len(ids) != 1 {
		return nil, fmt.Errorf("sweep the cancelled run: %v %v", ids, err)
	}

	// In flight: one shard done, one running, two pending.
	splitRun("sharded-in-flight", 4)
	runShards(m2, 1, completed)
	if got, err := m2.ShardClaim(ctx, 1); err != nil || len(got) != 1 {
		return nil, fmt.Errorf("claim a shard: %v %v", got, err)
	}

	// Poisoned: its lease lapsed at the cap of one requeue. Requeued once
	// after its owner died, and waiting to be claimed again.
	poisoned := must(h.submit(ctx, m1, submission{name: "cluster-poison", status: db.StatusPending}))
	claim(dying, poisoned.RunID)
	requeued := must(h.submit(ctx, m1, submission{name: "cluster-requeued", status: db.StatusPending}))
	claim(dying, requeued.RunID)
	time.Sleep(300 * time.Millisecond)
	if rep, err := m2.RunReclaimOrphans(ctx, 1); err != nil || rep.Requeued != 2 {
		return nil, fmt.Errorf("reclaim: %+v %v", rep, err)
	}
	claim(dying, poisoned.RunID)
	time.Sleep(300 * time.Millisecond)
	if rep, err := m2.RunReclaimOrphans(ctx, 1); err != nil || rep.Poisoned != 1 {
		return nil, fmt.Errorf("reclaim at the cap: %+v %v", rep, err)
	}

	// Pending: one waiting for a member, one cancelled before any claimed it.
	must(h.submit(ctx, m1, submission{name: "pending-load", key: "idem-pending", status: db.StatusPending, extras: true}))
	pendingCancel := must(h.submit(ctx, m2, submission{name: "pending-load", status: db.StatusPending}))
	if ok, err := m2.RunCancelPending(ctx, pendingCancel.RunID); err != nil || !ok {
		return nil, fmt.Errorf("cancel pending: %v %v", ok, err)
	}

	// Membership, audit entries besides the submits, and a denial.
	for _, m := range []db.Store{m1, m2} {
		step(m.InstanceHeartbeat(ctx, db.InstanceHeartbeat{StartedAt: windowStart, Listen: "10.0.0." + m.InstanceID()[1:] + ":8080", MaxConcurrent: 8, InFlight: 1, StateFormat: 1}))
	}
	for _, e := range []db.AuditEntry{
		{Principal: "ops", Role: "operator", Action: "run.cancel", RunID: ptr(cancelled.RunID), SourceIP: ptr("10.1.2.3"), Result: "ok"},
		{Principal: "viewer-bot", Role: "viewer", Action: "run.cancel", RunID: ptr(exec.RunID), SourceIP: ptr("10.9.9.9"), Result: "denied"},
		{Principal: "admin", Role: "admin", Action: "run.delete", RunID: ptr("0190a000-0000-7000-8000-00000000dead"), Result: "ok"},
	} {
		e.ID, e.Timestamp = uuid.Must(uuid.NewV7()).String(), time.Now().UTC()
		step(local.AuditInsert(ctx, e))
	}
	h.windows = append(h.windows, [2]time.Time{windowStart, time.Now().UTC()})
	return h, err
}

// golden is one request and what the API answered.
type golden struct {
	Request     string          `json:"request"`
	Status      int             `json:"status"`
	ContentType string          `json:"content_type"`
	JSON        json.RawMessage `json:"json,omitempty"`
	Text        *string         `json:"text,omitempty"`
}

// capture reads the history back through the HTTP API and records every
// answer.
func capture(h *history) ([]golden, error) {
	st := h.stores["local"]
	hub := logs.NewHub(logs.Options{})
	defer hub.Close(context.Background())
	run := runner.New(runner.Config{}, st, nil, hub, nil, nil)
	mux := http.NewServeMux()
	api.New(mux, &api.Deps{Runner: run, Store: st, Logs: hub, Auth: auth.Disabled()})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var out []golden
	get := func(path string) (golden, error) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return golden{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return golden{}, err
		}
		g := golden{Request: "GET " + path, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
		if strings.Contains(g.ContentType, "json") && !strings.Contains(g.ContentType, "ndjson") {
			g.JSON = json.RawMessage(body)
		} else {
			text := string(body)
			g.Text = &text
		}
		out = append(out, g)
		return g, nil
	}
	pages := func(path string) error {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		next := ""
		for {
			p := path
			if next != "" {
				p += sep + "cursor=" + url.QueryEscape(next)
			}
			g, err := get(p)
			if err != nil {
				return err
			}
			var page struct {
				NextCursor *string `json:"next_cursor"`
			}
			if err := json.Unmarshal(g.JSON, &page); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if page.NextCursor == nil {
				return nil
			}
			next = *page.NextCursor
		}
	}

	for _, id := range h.runs {
		if _, err := get("/v1/runs/" + id); err != nil {
			return nil, err
		}
	}
	if _, err := get("/v1/runs/0190a000-0000-7000-8000-000000000000"); err != nil {
		return nil, err
	}
	w := h.windows[0]
	since := w[0].Add(500 * time.Millisecond).Format(time.RFC3339Nano)
	until := w[1].Add(-200 * time.Millisecond).Format(time.RFC3339Nano)
	for _, p := range []string{
		"/v1/runs",
		"/v1/runs?limit=4",
		"/v1/runs?status=running&status=sharded&limit=2",
		"/v1/runs?status=pending&status=queued",
		"/v1/runs?status=completed&status=failed&status=cancelled&limit=3",
		"/v1/runs?name=orders&limit=2",
		"/v1/runs?since=" + url.QueryEscape(since) + "&until=" + url.QueryEscape(until) + "&limit=5",
	} {
		if err := pages(p); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, id := range h.logged {
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, q := range []string{"format=jsonl", "format=text", "format=jsonl&limit=2", "format=jsonl&after=2&limit=2"} {
			if _, err := get("/v1/runs/" + id + "/logs?" + q); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range []string{
		"/v1/audit",
		"/v1/audit?limit=3",
		"/v1/audit?principal=ops&limit=5",
		"/v1/audit?action=run.cancel",
		"/v1/audit?since=" + url.QueryEscape(since) + "&until=" + url.QueryEscape(until) + "&limit=4",
	} {
		if _, err := get(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// createDatabase makes an empty database on the server at base.
func createDatabase(ctx context.Context, base string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "faucet_upgrade_fixture_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}
