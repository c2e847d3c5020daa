// Package catalog records, when a run finishes, what it read and wrote into
// the history's data movement catalog (datasets, schema versions, volume,
// lineage edges) and the redacted config it executed. Recording happens
// after the run's terminal record is written and never changes it: a
// catalog write that fails is logged and counted
// (faucet_catalog_writes_total), and the run stays what it was.
//
// The records of runs that finish close together are written together, in
// one transaction, so that a server finishing hundreds of small runs a
// second pays for one catalog write per batch, not per run.
package catalog

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/memo"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/pipeline/snapshot"
	"github.com/faucet-dev/faucet/plugins/sdk"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Store is what the recorder writes to and reads back of a sharded run.
type Store interface {
	CatalogRecord(ctx context.Context, b db.CatalogBatch) error
	ShardLineages(ctx context.Context, runID string) ([]json.RawMessage, error)
}

// Config configures a Recorder.
type Config struct {
	Store Store
	// Metrics, when set, count the writes by outcome.
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// Secrets are masked in every URI besides each run's own (the API
	// tokens).
	Secrets []string
	// Budget bounds one batch's write, retries of transient failures
	// included; zero means DefaultBudget.
	Budget time.Duration
	// Queue bounds the records waiting for their write; past it a record
	// is dropped (and counted failed) rather than held. Zero means
	// DefaultQueue.
	Queue int
	// Linger bounds how long a batch waits for more records after its
	// first; zero means DefaultLinger.
	Linger time.Duration
	// Busy, when set, reports whether runs are still executing here, whose
	// records will follow: while it does, a batch waits for them (up to
	// Linger) instead of ending at the first lull (lingerGap). A server's
	// runs finish in bursts, a few milliseconds apart, and ending a batch
	// at every lull cut its batches to a dozen runs, each paying for a
	// commit and an upsert of every dataset and edge it touches.
	Busy func() bool
}

// Defaults of Config.
const (
	// DefaultBudget is how long a batch's write may take: a database that
	// does not answer within it costs the catalog that batch, never a run.
	DefaultBudget = 10 * time.Second
	DefaultQueue  = 10000
	// DefaultLinger keeps a catalog a moment behind its runs under load,
	// and the batches of a busy server large enough that their fixed cost
	// (a commit, an upsert of each dataset and edge, a schema check, a
	// snapshot) is shared by a hundred runs or more, not a dozen. A lone
	// run, or the last of a burst, is written at once all the same
	// (lingerGap, Config.Busy).
	DefaultLinger = 250 * time.Millisecond
)

// lingerGap is how often a batch looks for more records: one that finds
// none came since its last look, while no run is executing (Config.Busy),
// ends, so a lone run, or the last of a burst, is written within a look or
// two.
const lingerGap = 5 * time.Millisecond

// maxBatch bounds the records one transaction writes.
const maxBatch = 500

// Recorder writes finished runs into the catalog, in the background. Call
// Start before recording and Stop at shutdown; its methods are safe for
// concurrent use, and a nil Recorder records nothing.
type Recorder struct {
	cfg   Config
	queue chan pending
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	// writes bounds every write; Stop ends it once its own deadline passes.
	writes    context.Context
	endWrites context.CancelFunc
	// snapshots caches encoded snapshots by pipeline and content
	// (snapshot.Key): the runs of one config, a thousand a minute, encode it
	// once, and so do the runs of a few configs that share a name and take
	// turns (one pipeline writing a file per client, say).
	snapshots *memo.Memo[json.RawMessage]
	// tokens masks Config.Secrets alone, built once: most runs have no
	// secret of their own, and building a redactor (its string search
	// tables) per run cost the catalog as much as encoding its records.
	tokens *redact.Redactor
	// uris caches the URIs tokens and RedactURI make of the URIs the
	// connectors report, for the runs without secrets of their own: the
	// runs of a pipeline report the same few, and parsing and searching
	// each again was a good part of what the catalog cost a trivial run.
	uris *memo.Memo[string]
	// schemas holds the last schema each cleaned URI was recorded with, as
	// the catalog stores it: the runs of a pipeline report the same one,
	// which they share rather than each converting its own copy. Its
	// slices are never changed once in it.
	schemas *memo.Memo[[]db.SchemaColumn]
}

// pending is one run's part of a batch.
type pending struct {
	runID       string
	invocations []db.CatalogInvocation
	snapshot    *db.ConfigSnapshot
	// sharded is a sharded run whose one invocation the writer makes from
	// its shards' kept lineage, read with the batch.
	sharded *shardedRun
}

// New returns a Recorder; Start starts its writes.
func New(cfg Config) *Recorder {
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	writes, endWrites := context.WithCancel(context.Background())
	return &Recorder{
		cfg: cfg, queue: make(chan pending, cfg.Queue), stop: make(chan struct{}), done: make(chan struct{}),
		writes: writes, endWrites: endWrites, snapshots: memo.New[json.RawMessage](maxCachedSnapshots),
		tokens: redact.New(cfg.Secrets), uris: memo.New[string](maxCachedURIs), schemas: memo.New[[]db.SchemaColumn](maxCachedURIs),
	}
}

// Start starts writing what Record queues.
func (r *Recorder) Start() {
	if r != nil {
		go r.loop()
	}
}

// Stop writes what is queued, within ctx, and stops. What it cannot write
// in time is left out, and counted failed: once ctx ends, the write under
// way is cancelled and the rest fail at once, so Stop returns promptly and
// nothing writes after it.
func (r *Recorder) Stop(ctx context.Context) {
	if r == nil {
		return
	}
	r.once.Do(func() { close(r.stop) })
	select {
	case <-r.done:
	case <-ctx.Done():
		r.cfg.Log.Warn("catalog records still queued at shutdown are left out", "queued", len(r.queue))
		r.endWrites()
		<-r.done
	}
	r.endWrites()
}

// Record queues what a run that executed plan read and wrote for its
// batch: each invocation that succeeded, with the datasets its connectors
// reported, and the config the run executed, under the run's name (a run
// without one keeps no snapshot). It never blocks on the database.
func (r *Recorder) Record(_ context.Context, run *db.RunRecord, plan *pipeline.Plan, results []pipeline.InvocationResult) {
	if r == nil || run == nil || plan == nil {
		return
	}
	p := pending{runID: run.RunID, snapshot: r.snapshot(run, plan)}
	clean := r.uriCleaner(plan)
	for _, res := range results {
		if res.Err != nil || res.Lineage == nil {
			continue
		}
		if inv, ok := r.invocation(run, plan, res.RowID, res.Duration, *res.Lineage, clean); ok {
			p.invocations = append(p.invocations, inv)
		}
	}
	r.enqueue(p)
}

// uriCleaner returns what makes a reported URI the catalog's: the run's
// secrets and Config.Secrets masked, then credentials removed
// (cleanURI). A run without secrets of its own shares the cache.
func (r *Recorder) uriCleaner(plan *pipeline.Plan) func(string) string {
	if len(plan.Secrets) > 0 {
		red := redact.New(plan.Secrets, r.cfg.Secrets)
		return func(uri string) string { return cleanURI(red, uri) }
	}
	return func(uri string) string {
		if out, ok := r.uris.Get(uri); ok {
			return out
		}
		out := cleanURI(r.tokens, uri)
		r.uris.Put(uri, out)
		return out
	}
}

// maxCachedURIs bounds the URI and schema caches.
const maxCachedURIs = 4096

// cleanURI is a reported URI as the catalog stores it. The URI is redacted
// once more, whatever the connector did: a password in the URL, or any
// secret of the run, never reaches the catalog.
func cleanURI(red *redact.Redactor, uri string) string {
	return sdk.RedactURI(red.String(uri))
}

// enqueue hands a run's records to the writer, or drops them when the
// queue is full: a catalog that cannot keep up loses records, never holds
// up a run.
func (r *Recorder) enqueue(p pending) {
	if len(p.invocations) == 0 && p.snapshot == nil && p.sharded == nil {
		return
	}
	select {
	case r.queue <- p:
	default:
		r.cfg.Log.Warn("catalog queue is full; the run's records are left out", "run_id", p.runID, "queue", r.cfg.Queue)
		r.count(p, "failed")
	}
}

// loop writes batches: a record and those that follow it closely, so a
// lone run is written at once and a burst shares writes.
func (r *Recorder) loop() {
	defer close(r.done)
	for {
		var first pending
		select {
		case first = <-r.queue:
		case <-r.stop:
			// Drain what was queued before the stop.
			for {
				select {
				case first = <-r.queue:
					r.flush(r.collect(first))
				default:
					return
				}
			}
		}
		r.flush(r.collect(first))
	}
}

// collect is a batch: first and what follows it, up to maxBatch, until a
// look every lingerGap finds that none came while no run is executing, or
// the batch has waited Linger. It looks on a ticker rather than waiting on
// each record: a busy server finishes a run every half millisecond, and
// waking the writer for each of them cost the server more than the records
// cost to make; now a run's Record is a send that wakes no one but the
// first of a batch.
func (r *Recorder) collect(first pending) []pending {
	batch := r.drain([]pending{first})
	deadline := time.NewTimer(r.cfg.Linger)
	defer deadline.Stop()
	tick := time.NewTicker(lingerGap)
	defer tick.Stop()
	for len(batch) < maxBatch {
		select {
		case <-tick.C:
		case <-deadline.C:
			return r.drain(batch)
		case <-r.stop:
			return r.drain(batch)
		}
		n := len(batch)
		if batch = r.drain(batch); len(batch) == n && (r.cfg.Busy == nil || !r.cfg.Busy()) {
			return batch
		}
	}
	return batch
}

// drain adds the records queued now to batch, up to maxBatch.
func (r *Recorder) drain(batch []pending) []pending {
	for len(batch) < maxBatch {
		select {
		case p := <-r.queue:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// flush writes a batch in one transaction, retrying a transient failure
// within the budget, and logs and counts its outcome.
func (r *Recorder) flush(batch []pending) {
	ctx, cancel := context.WithTimeout(r.writes, r.cfg.Budget)
	defer cancel()
	for i := range batch {
		if sh := batch[i].sharded; sh != nil {
			batch[i].invocations = r.shardedInvocations(ctx, sh)
		}
	}
	invocations := 0
	for _, p := range batch {
		invocations += len(p.invocations)
	}
	// The id is the batch's on every attempt: one whose commit was lost to
	// us is not recorded again.
	b := db.CatalogBatch{ID: rand.Text(), Invocations: make([]db.CatalogInvocation, 0, invocations), Snapshots: make([]db.ConfigSnapshot, 0, len(batch))}
	for _, p := range batch {
		b.Invocations = append(b.Invocations, p.invocations...)
		if p.snapshot != nil {
			b.Snapshots = append(b.Snapshots, *p.snapshot)
		}
	}
	err := r.attempt(ctx, func(ctx context.Context) error { return r.cfg.Store.CatalogRecord(ctx, b) })
	outcome := "ok"
	if err != nil {
		outcome = "failed"
		runs := make([]string, len(batch))
		for i, p := range batch {
			runs[i] = p.runID
		}
		if errors.Is(err, context.DeadlineExceeded) {
			r.cfg.Log.Warn("catalog write took longer than its budget; the runs are unaffected", "run_ids", runs, "budget", r.cfg.Budget.String())
		} else {
			r.cfg.Log.Warn("catalog write failed; the runs are unaffected", "run_ids", runs, "error", err)
		}
	}
	for _, p := range batch {
		r.count(p, outcome)
	}
}

// attempt calls fn until it succeeds, fails for good, or the budget in
// ctx runs out, backing off between transient failures.
func (r *Recorder) attempt(ctx context.Context, fn func(context.Context) error) error {
	delay := 100 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil || !db.Retriable(err) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// count adds a run's records to faucet_catalog_writes_total.
func (r *Recorder) count(p pending, outcome string) {
	if r.cfg.Metrics == nil {
		return
	}
	if n := len(p.invocations); n > 0 {
		r.cfg.Metrics.CatalogWrites.WithLabelValues("lineage", outcome).Add(float64(n))
	}
	if p.snapshot != nil {
		r.cfg.Metrics.CatalogWrites.WithLabelValues("snapshot", outcome).Inc()
	}
}

// name is the pipeline name a run is catalogued under: its own, which
// defaults to its config's.
func name(run *db.RunRecord, plan *pipeline.Plan) string {
	if run.Name != nil && *run.Name != "" {
		return *run.Name
	}
	return plan.Name
}

// invocation is one invocation's record; false when its connectors
// reported no dataset.
func (r *Recorder) invocation(run *db.RunRecord, plan *pipeline.Plan, row string, took time.Duration, l pipeline.Lineage, clean func(string) string) (db.CatalogInvocation, bool) {
	inv := db.CatalogInvocation{
		RunID: run.RunID, Pipeline: name(run, plan), RowID: row, Status: run.Status, Duration: took,
		Sources: r.observations(l.Source, clean), Sinks: r.observations(l.Sink, clean),
	}
	if run.FinishedAt != nil {
		inv.RecordedAt = *run.FinishedAt
	}
	return inv, len(inv.Sources)+len(inv.Sinks) > 0
}

// observations are one side's datasets as the catalog stores them, their
// URIs cleaned by clean (uriCleaner).
func (r *Recorder) observations(o pipeline.Observation, clean func(string) string) []db.CatalogObservation {
	if len(o.Datasets) == 0 {
		return nil
	}
	out := make([]db.CatalogObservation, 0, len(o.Datasets))
	for _, d := range o.Datasets {
		obs := db.CatalogObservation{URI: clean(d.URI), Kind: d.Kind, Records: o.Records}
		if o.Bytes > 0 {
			bytes := o.Bytes
			obs.Bytes = &bytes
		}
		if d.Schema != nil {
			obs.Schema = r.schema(obs.URI, d.Schema.Columns)
		}
		out = append(out, obs)
	}
	return out
}

// schema is cols as the catalog stores them: the slice recorded last for
// uri when it holds the same columns, a new one otherwise.
func (r *Recorder) schema(uri string, cols []pipeline.Column) []db.SchemaColumn {
	if last, ok := r.schemas.Get(uri); ok && slices.EqualFunc(last, cols, func(a db.SchemaColumn, c pipeline.Column) bool {
		return a.Name == c.Name && a.Type == c.Type && a.Nullable == c.Nullable && a.DBType == c.DBType
	}) {
		return last
	}
	out := make([]db.SchemaColumn, len(cols))
	for i, c := range cols {
		out[i] = db.SchemaColumn{Name: c.Name, Type: c.Type, Nullable: c.Nullable, DBType: c.DBType}
	}
	r.schemas.Put(uri, out)
	return out
}

// snapshot is the config snapshot of a run, nil for a run without a name.
// A run whose pipeline, config and secrets are those of an earlier run
// reuses that run's encoded snapshot (salt included, so the fingerprints
// match).
func (r *Recorder) snapshot(run *db.RunRecord, plan *pipeline.Plan) *db.ConfigSnapshot {
	pipelineName := name(run, plan)
	if pipelineName == "" {
		return nil
	}
	key := snapshot.Key(plan, pipelineName)
	body, ok := r.snapshots.Get(key)
	if !ok {
		body = snapshot.Of(plan, pipelineName, snapshot.NewSalt()).Marshal()
		r.snapshots.Put(key, body)
	}
	snap := &db.ConfigSnapshot{Pipeline: pipelineName, RunID: run.RunID, Body: body}
	if run.FinishedAt != nil {
		snap.RecordedAt = *run.FinishedAt
	}
	return snap
}

// maxCachedSnapshots bounds the snapshot cache.
const maxCachedSnapshots = 1000
