// Package catalog records, when a run finishes, what it read and wrote into
// the history's data movement catalog (datasets, schema versions, volume,
// lineage edges) and the redacted config it executed. Recording happens
// after the run's terminal record is written and never changes it: a
// catalog write that fails is logged and counted
// (faucet_catalog_writes_total), and the run stays what it was.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/pipeline/snapshot"
	"github.com/faucet-dev/faucet/plugins/sdk"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/redact"
)

// Store is what the recorder writes to and reads back of a sharded run.
type Store interface {
	CatalogRecord(ctx context.Context, inv db.CatalogInvocation) error
	ConfigSnapshotPut(ctx context.Context, s db.ConfigSnapshot) error
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
	// Budget bounds one run's recording, retries of transient failures
	// included; zero means DefaultBudget.
	Budget time.Duration
}

// DefaultBudget is how long a run's recording may take: a database that
// does not answer within it costs the catalog that run, never the run.
const DefaultBudget = 10 * time.Second

// Recorder writes finished runs into the catalog. Its methods are safe for
// concurrent use.
type Recorder struct {
	cfg Config
}

// New returns a Recorder.
func New(cfg Config) *Recorder {
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{cfg: cfg}
}

// Record records a run that finished executing plan: each invocation that
// succeeded with the datasets its connectors reported, and the config the
// run executed, under the run's name (a run without one keeps no
// snapshot). A nil Recorder records nothing.
func (r *Recorder) Record(ctx context.Context, run *db.RunRecord, plan *pipeline.Plan, results []pipeline.InvocationResult) {
	if r == nil || run == nil || plan == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Budget)
	defer cancel()
	red := redact.New(plan.Secrets, r.cfg.Secrets)
	for _, res := range results {
		if res.Err != nil || res.Lineage == nil {
			continue
		}
		r.lineage(ctx, run, plan, res.RowID, res.Duration, *res.Lineage, red)
	}
	r.snapshot(ctx, run, plan)
}

// name is the pipeline name a run is catalogued under: its own, which
// defaults to its config's.
func name(run *db.RunRecord, plan *pipeline.Plan) string {
	if run.Name != nil && *run.Name != "" {
		return *run.Name
	}
	return plan.Name
}

// lineage records one invocation's datasets.
func (r *Recorder) lineage(ctx context.Context, run *db.RunRecord, plan *pipeline.Plan, row string, took time.Duration, l pipeline.Lineage, red *redact.Redactor) {
	inv := db.CatalogInvocation{
		RunID: run.RunID, Pipeline: name(run, plan), RowID: row, Status: run.Status, Duration: took,
		Sources: observations(l.Source, red), Sinks: observations(l.Sink, red),
	}
	if run.FinishedAt != nil {
		inv.RecordedAt = *run.FinishedAt
	}
	if len(inv.Sources)+len(inv.Sinks) == 0 {
		return
	}
	r.write(ctx, "lineage", run.RunID, func(ctx context.Context) error { return r.cfg.Store.CatalogRecord(ctx, inv) })
}

// observations are one side's datasets as the catalog stores them. The
// URIs are redacted once more, whatever the connector did: a password in
// the URL, or any secret of the run, never reaches the catalog.
func observations(o pipeline.Observation, red *redact.Redactor) []db.CatalogObservation {
	var out []db.CatalogObservation
	for _, d := range o.Datasets {
		obs := db.CatalogObservation{URI: sdk.RedactURI(red.String(d.URI)), Kind: d.Kind, Records: o.Records}
		if o.Bytes > 0 {
			bytes := o.Bytes
			obs.Bytes = &bytes
		}
		if d.Schema != nil {
			obs.Schema = make([]db.SchemaColumn, len(d.Schema.Columns))
			for i, c := range d.Schema.Columns {
				obs.Schema[i] = db.SchemaColumn{Name: c.Name, Type: c.Type, Nullable: c.Nullable, DBType: c.DBType}
			}
		}
		out = append(out, obs)
	}
	return out
}

// snapshot records the config the run executed.
func (r *Recorder) snapshot(ctx context.Context, run *db.RunRecord, plan *pipeline.Plan) {
	pipelineName := name(run, plan)
	if pipelineName == "" {
		return
	}
	snap := db.ConfigSnapshot{Pipeline: pipelineName, RunID: run.RunID, Body: snapshot.Of(plan, pipelineName, snapshot.NewSalt()).Marshal()}
	if run.FinishedAt != nil {
		snap.RecordedAt = *run.FinishedAt
	}
	r.write(ctx, "snapshot", run.RunID, func(ctx context.Context) error { return r.cfg.Store.ConfigSnapshotPut(ctx, snap) })
}

// write runs one catalog write and logs and counts its outcome.
func (r *Recorder) write(ctx context.Context, kind, runID string, fn func(context.Context) error) {
	r.report(kind, runID, r.attempt(ctx, fn))
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

// report logs a failed write and counts every write by outcome.
func (r *Recorder) report(kind, runID string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "failed"
		if errors.Is(err, context.DeadlineExceeded) {
			r.cfg.Log.Warn("catalog write took longer than its budget; the run is unaffected", "kind", kind, "run_id", runID, "budget", r.cfg.Budget.String())
		} else {
			r.cfg.Log.Warn("catalog write failed; the run is unaffected", "kind", kind, "run_id", runID, "error", err)
		}
	}
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.CatalogWrites.WithLabelValues(kind, outcome).Inc()
	}
}
