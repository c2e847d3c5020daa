// Package runner owns the run lifecycle of faucet serve: submit (validate,
// reserve a queue slot, doctor_first, idempotency, record), the local queue,
// execution with its cancel, timeout and shutdown triggers, finalize, startup
// recovery and the retention loop; in cluster mode also the claim loop, the
// heartbeat, reclaim of runs whose owner died, and source shards.
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/logs"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/redact"
)

// Config bounds and times the runner. Zero values take the defaults below.
type Config struct {
	// MaxConcurrent runs execute at once.
	MaxConcurrent int
	// MaxQueued runs may wait for an execution slot; more get ErrQueueFull.
	MaxQueued int
	// IdempotencyRetention is how long an idempotency key stays claimed.
	IdempotencyRetention time.Duration
	// FlushGrace is how long a cancelled or timed-out run may take to flush
	// before it is finalized regardless.
	FlushGrace time.Duration
	// ProbeTimeout bounds doctor probes.
	ProbeTimeout time.Duration
	// QueueFullRetryAfter is the Retry-After advertised with ErrQueueFull.
	QueueFullRetryAfter time.Duration
	// Secrets are masked in every run's logs and records besides the plan's
	// own (the API tokens).
	Secrets []string

	// Cluster makes this instance one member of a cluster sharing the store:
	// submits are written pending and any member's claim loop executes them.
	Cluster bool
	// ClusterPoll is how often the claim loop looks for work (and reclaims
	// runs whose owner died) without a wake-up.
	ClusterPoll time.Duration
	// LeaseTTL is the store's lease; the heartbeat renews every third of it.
	LeaseTTL time.Duration
	// MaxAttempts is how many times a run or shard whose owner's lease
	// lapsed is requeued before it is failed as poison.
	MaxAttempts int
	// Listen is the address this instance serves on, for the membership row.
	Listen string
}

// DefaultMaxConcurrent is the default number of runs executing at once: runs
// mostly wait on their connector processes, so twice the CPUs, at least 4.
func DefaultMaxConcurrent() int { return max(4, 2*runtime.NumCPU()) }

// Defaults for Config.
const (
	DefaultMaxQueued            = 1000
	DefaultIdempotencyRetention = 24 * time.Hour
	DefaultFlushGrace           = 30 * time.Second
	DefaultProbeTimeout         = 10 * time.Second
	DefaultQueueFullRetryAfter  = 5 * time.Second
	DefaultClusterPoll          = 2 * time.Second
	DefaultMaxAttempts          = 3
)

// Runner executes submitted runs on this instance.
type Runner struct {
	cfg     Config
	store   db.Store
	engine  Engine
	logs    *logs.Hub
	metrics *metrics.Metrics
	log     *slog.Logger

	// slots holds one token per executing run.
	slots chan struct{}

	mu       sync.Mutex
	queued   int // reserved queue slots: submits in progress and runs waiting for a slot
	inFlight int
	active   map[string]*active
	// shards are the source shards executing here, by run id then shard id.
	shards map[string]map[string]*active
	// recording holds runs whose idempotency claim is fresh but whose record
	// is not yet written; a replay of the key waits for it.
	recording map[string]chan struct{}
	closing   bool

	shutdown chan struct{}
	// deadline is when shutdown gives up waiting for runs to flush.
	deadline time.Time
	wg       sync.WaitGroup

	// wake asks the cluster claim loop to look for work now.
	wake chan struct{}
	// shardsSeen says the claim loop may find pending shards without
	// waiting for its poll.
	shardsSeen atomic.Bool
	// plans holds the plans of the runs this member accepted in cluster
	// mode, so when it claims one of them itself (a submit wakes its own
	// claim loop) the config is not loaded a second time.
	plans planCache
	// started is when this instance started, for the membership row.
	started time.Time
}

// New returns a Runner. Call Shutdown to stop it.
func New(cfg Config, store db.Store, engine Engine, hub *logs.Hub, m *metrics.Metrics, log *slog.Logger) *Runner {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent()
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.IdempotencyRetention <= 0 {
		cfg.IdempotencyRetention = DefaultIdempotencyRetention
	}
	if cfg.FlushGrace <= 0 {
		cfg.FlushGrace = DefaultFlushGrace
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.QueueFullRetryAfter <= 0 {
		cfg.QueueFullRetryAfter = DefaultQueueFullRetryAfter
	}
	if cfg.ClusterPoll <= 0 {
		cfg.ClusterPoll = DefaultClusterPoll
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = db.DefaultLeaseTTL
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		cfg:       cfg,
		store:     store,
		engine:    engine,
		logs:      hub,
		metrics:   m,
		log:       log,
		slots:     make(chan struct{}, cfg.MaxConcurrent),
		active:    map[string]*active{},
		shards:    map[string]map[string]*active{},
		recording: map[string]chan struct{}{},
		shutdown:  make(chan struct{}),
		wake:      make(chan struct{}, 1),
		started:   time.Now().UTC(),
	}
}

// Config returns the effective configuration.
func (r *Runner) Config() Config { return r.cfg }

// active is a run (or one shard of a run) this process owns: queued or
// executing.
type active struct {
	rec    *db.RunRecord
	cancel chan struct{}
	once   sync.Once
	// log is the run's log capture.
	log *logs.Run
	// owned fences the terminal write on this instance's ownership: the run
	// was claimed from the cluster, and a peer may reclaim it.
	owned bool
	// records is the count the sinks acknowledged so far.
	records atomic.Int64

	finalizeMu sync.Mutex
	finalized  bool
}

func (a *active) requestCancel() { a.once.Do(func() { close(a.cancel) }) }

// SubmitRequest is a run submission as the API received it.
type SubmitRequest struct {
	Config         string
	ConfigFormat   string
	Name           *string
	Labels         map[string]string
	TimeoutSecs    *int64
	DoctorFirst    bool
	IdempotencyKey *string
	// Clock is an RFC 3339 time overriding the run's notion of "now".
	Clock       *string
	Concurrency *int
	Callback    json.RawMessage
	// Audit, when set, is the audit entry of the submission: who and from
	// where. Submit completes it (id, time, run, fingerprint, result) and
	// writes it together with the run record.
	Audit *db.AuditEntry

	// Template, when set, is the template version the config was
	// materialized from; the run record keeps it.
	Template *TemplateRef
	// Secrets are values the config holds that no record, log or error may
	// show (a template's secret params): masked like the plan's own.
	Secrets []string
	// Fingerprint, when set, stands for the config in the audit entry and
	// the idempotency fingerprint, for a config that holds Secrets, which
	// nothing stored may be derived from.
	Fingerprint string
	// Fire, when set, is the trigger event (a schedule's slot, a file) the
	// run is for: it is written with the run, and an event that started a
	// run already writes nothing and fails with db.ErrAlreadyFired.
	Fire *db.TriggerFire
}

// TemplateRef names one version of a template.
type TemplateRef struct {
	ID      string
	Version int
}

// SubmitResult describes the accepted (or replayed) run.
type SubmitResult struct {
	RunID       string
	Status      db.RunStatus
	SubmittedAt time.Time
	// Replay is true when an idempotency key matched an existing run.
	Replay bool
	// Fingerprint is the config fingerprint, recorded in the audit log.
	Fingerprint string
	Warnings    []string
}

// reservation releases a queue slot unless handed to the run.
type reservation struct {
	r    *Runner
	kept bool
}

func (v *reservation) release() {
	if v.kept {
		return
	}
	v.kept = true
	v.r.mu.Lock()
	v.r.queued--
	v.r.mu.Unlock()
	v.r.gauges()
}

// Submit validates a submission, reserves a queue slot, runs the doctor_first
// probes, claims the idempotency key and writes the run record together with
// its audit entry. A local run is handed to the local queue; in cluster mode
// the record is written pending, with its raw config, for any member's claim
// loop.
func (r *Runner) Submit(ctx context.Context, req SubmitRequest) (SubmitResult, error) {
	if r.isClosing() {
		return SubmitResult{}, ErrShuttingDown
	}
	if req.Clock != nil {
		// Normalized, so equal instants written differently fingerprint
		// equally.
		t, err := time.Parse(time.RFC3339, *req.Clock)
		if err != nil {
			return SubmitResult{}, &ConfigError{Err: fmt.Errorf("clock %q is not an RFC 3339 time", *req.Clock)}
		}
		clock := t.UTC().Format(time.RFC3339Nano)
		req.Clock = &clock
	}
	plan, err := r.load(req)
	if err != nil {
		return SubmitResult{}, err
	}
	plan.Secrets = append(plan.Secrets, req.Secrets...)
	red := r.redactor(plan)

	// Reserve first: everything below (probes, claims) is bounded by the
	// queue, and a fresh idempotency claim is always followed by a run.
	res, err := r.reserve()
	if err != nil {
		return SubmitResult{}, err
	}
	defer res.release()

	var report json.RawMessage
	if req.DoctorFirst {
		rep, err := r.doctor(ctx, plan, red)
		if err != nil {
			return SubmitResult{}, err
		}
		if report, err = json.Marshal(rep); err != nil {
			return SubmitResult{}, fmt.Errorf("encode doctor report: %w", err)
		}
	}

	runID := uuid.Must(uuid.NewV7()).String()
	configFP := plan.Fingerprint
	if req.Fingerprint != "" {
		configFP = req.Fingerprint
	}
	if configFP == "" {
		configFP = sha256Hex([]byte(req.Config))
	}
	if req.IdempotencyKey != nil {
		replay, err := r.claim(ctx, *req.IdempotencyKey, requestFingerprint(configFP, req), runID)
		if err != nil {
			return SubmitResult{}, err
		}
		if replay != nil {
			replay.Fingerprint = configFP
			if e := r.auditEntry(req.Audit, replay.RunID, configFP); e != nil {
				if err := r.store.AuditInsert(context.WithoutCancel(ctx), *e); err != nil {
					r.log.Error("write audit entry", "action", e.Action, "principal", e.Principal, "error", err)
				}
			}
			return *replay, nil
		}
		defer r.recorded(runID)
	}

	// The store keeps microseconds: the response says what a read returns.
	now := time.Now().UTC().Truncate(time.Microsecond)
	status := db.StatusQueued
	if r.cfg.Cluster {
		status = db.StatusPending
	}
	rec := &db.RunRecord{
		RunID:          runID,
		Name:           req.Name,
		Labels:         req.Labels,
		Status:         status,
		SubmittedAt:    now,
		Invocations:    []db.InvocationRecord{},
		IdempotencyKey: req.IdempotencyKey,
		DoctorReport:   report,
		TimeoutSecs:    req.TimeoutSecs,
		Clock:          req.Clock,
		Concurrency:    req.Concurrency,
		Callback:       req.Callback,
	}
	if t := req.Template; t != nil {
		rec.TemplateID, rec.TemplateVersion = &t.ID, &t.Version
	}
	if rec.Name == nil && plan.Name != "" {
		name := plan.Name
		rec.Name = &name
	}
	if rec.Labels == nil {
		rec.Labels = map[string]string{}
	}
	format := req.ConfigFormat
	rec.ConfigFormat = &format
	if r.cfg.Cluster {
		// Raw, as submitted: the claiming member interpolates it with its own
		// environment, so no resolved secret is ever stored.
		rec.ConfigBody = &req.Config
		// Cached before the write: this member's claim loop may take the
		// run the moment it is written.
		r.plans.put(runID, plan)
	}
	if err := r.record(ctx, rec, r.auditEntry(req.Audit, runID, configFP), req.Fire); err != nil {
		r.plans.take(runID)
		if req.IdempotencyKey != nil {
			if relErr := r.store.IdempotencyRelease(context.WithoutCancel(ctx), runID); relErr != nil {
				r.log.Warn("release idempotency claim after failed record write", "run_id", runID, "error", relErr)
			}
		}
		if db.Retriable(err) {
			r.log.Warn("write run record", "run_id", runID, "error", err)
			return SubmitResult{}, unavailable("the run history did not accept the run record; retry")
		}
		return SubmitResult{}, fmt.Errorf("write run record: %w", err)
	}
	if r.metrics != nil {
		r.metrics.RunsSubmitted.Inc()
	}
	warnings := append(r.warnings(plan), requestWarnings(req)...)
	for _, w := range warnings {
		r.log.Warn("submission warning", "run_id", runID, "warning", w)
	}
	result := SubmitResult{RunID: runID, Status: status, SubmittedAt: now, Fingerprint: configFP, Warnings: warnings}
	if r.cfg.Cluster {
		r.kick()
		return result, nil
	}

	a := &active{rec: rec, cancel: make(chan struct{}), log: r.logs.Open(runID, red)}
	r.mu.Lock()
	r.active[runID] = a
	r.wg.Add(1)
	r.mu.Unlock()
	res.kept = true
	a.log.Append(slog.LevelInfo, "run queued")
	go r.queue(a, plan, red)
	return result, nil
}

// record writes the run record with its audit entry and, for a run a
// trigger's event started, the event's fire.
func (r *Runner) record(ctx context.Context, rec *db.RunRecord, audit *db.AuditEntry, fire *db.TriggerFire) error {
	if fire != nil {
		return r.store.RunSubmitFired(ctx, rec, audit, *fire)
	}
	return r.store.RunSubmit(ctx, rec, audit)
}

// auditEntry completes the submission's audit entry for runID; nil when the
// request carries none.
func (r *Runner) auditEntry(base *db.AuditEntry, runID, fingerprint string) *db.AuditEntry {
	if base == nil {
		return nil
	}
	e := *base
	e.ID = uuid.Must(uuid.NewV7()).String()
	e.Timestamp = time.Now().UTC()
	e.RunID = &runID
	e.ConfigFingerprint = &fingerprint
	e.Result = "ok"
	return &e
}

// load loads the config and applies the request's overrides. The
// problems of a config holding secrets are masked, as pipeline masks the
// values it resolves itself.
func (r *Runner) load(req SubmitRequest) (*pipeline.Plan, error) {
	plan, err := r.engine.Load([]byte(req.Config), req.ConfigFormat)
	if err != nil {
		if len(req.Secrets) > 0 {
			red := redact.New(req.Secrets)
			for _, p := range pipeline.ConfigProblems(err) {
				p.Message = red.String(p.Message)
			}
		}
		return nil, &ConfigError{Err: err}
	}
	if req.Concurrency != nil {
		plan.Execution.MaxConcurrent = *req.Concurrency
	}
	return plan, nil
}

// Doctor loads a config and probes its connectors, without running it. The
// report is redacted.
func (r *Runner) Doctor(ctx context.Context, config, format string) (DoctorReport, error) {
	plan, err := r.engine.Load([]byte(config), format)
	if err != nil {
		return DoctorReport{}, &ConfigError{Err: err}
	}
	return r.probe(ctx, plan, r.redactor(plan))
}

// doctor runs the doctor_first probes of a submission: a failing probe
// rejects it with a DoctorError.
func (r *Runner) doctor(ctx context.Context, plan *pipeline.Plan, red *redact.Redactor) (DoctorReport, error) {
	rep, err := r.probe(ctx, plan, red)
	if err == nil && !rep.OK {
		err = &DoctorError{Report: rep}
	}
	return rep, err
}

func (r *Runner) probe(ctx context.Context, plan *pipeline.Plan, red *redact.Redactor) (DoctorReport, error) {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.ProbeTimeout)
	defer cancel()
	rep, err := r.engine.Probe(pctx, plan)
	if err != nil {
		return DoctorReport{}, fmt.Errorf("probe connectors: %s", red.String(err.Error()))
	}
	rep.OK = rep.Failures() == 0
	return rep.Redacted(red), nil
}

func (r *Runner) reserve() (*reservation, error) {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if r.queued >= r.cfg.MaxQueued {
		r.mu.Unlock()
		return nil, ErrQueueFull
	}
	r.queued++
	r.mu.Unlock()
	r.gauges()
	return &reservation{r: r}, nil
}

// claim claims an idempotency key for runID. A nil result with a nil error
// means the claim is fresh and the caller must call recorded(runID) once
// the record is written (or failed to be).
func (r *Runner) claim(ctx context.Context, key, fp, runID string) (*SubmitResult, error) {
	r.mu.Lock()
	r.recording[runID] = make(chan struct{})
	r.mu.Unlock()
	for attempt := 0; ; attempt++ {
		c, err := r.store.IdempotencyClaim(ctx, key, fp, runID, r.cfg.IdempotencyRetention)
		if err != nil {
			r.recorded(runID)
			if db.Retriable(err) {
				r.log.Warn("claim idempotency key", "error", err)
				return nil, unavailable("the run history did not answer the idempotency claim; retry")
			}
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		switch c.Outcome {
		case db.ClaimFresh:
			return nil, nil
		case db.ClaimConflict:
			r.recorded(runID)
			return nil, ErrIdempotencyConflict
		}
		rec, err := r.awaitRecord(ctx, c.RunID)
		if err == nil {
			r.recorded(runID)
			if r.metrics != nil {
				r.metrics.IdempotencyReplays.Inc()
			}
			return &SubmitResult{RunID: rec.RunID, Status: rec.Status, SubmittedAt: rec.SubmittedAt, Replay: true}, nil
		}
		if !errors.Is(err, db.ErrNotFound) || attempt > 0 {
			r.recorded(runID)
			return nil, fmt.Errorf("read replayed run %s: %w", c.RunID, err)
		}
		// The key points at a run that no longer exists (deleted or purged
		// while its claim lived on): free the key and claim it afresh.
		if err := r.store.IdempotencyRelease(ctx, c.RunID); err != nil {
			r.recorded(runID)
			return nil, fmt.Errorf("release stale idempotency claim: %w", err)
		}
	}
}

// awaitRecord reads the run a replayed key points at. The run may have been
// claimed an instant ago by a concurrent submit that has not written its
// record yet: wait for that submit when it is ours, poll briefly otherwise.
func (r *Runner) awaitRecord(ctx context.Context, runID string) (*db.RunRecord, error) {
	r.mu.Lock()
	wait := r.recording[runID]
	r.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	delay := 10 * time.Millisecond
	for i := 0; ; i++ {
		rec, err := r.store.RunGet(ctx, runID)
		if err == nil || !errors.Is(err, db.ErrNotFound) || i == 6 {
			return rec, err
		}
		select {
		case <-time.After(delay):
			delay *= 2
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (r *Runner) recorded(runID string) {
	r.mu.Lock()
	ch := r.recording[runID]
	delete(r.recording, runID)
	r.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// requestFingerprint is the idempotency identity of a submission: the config
// fingerprint plus every request field that changes what the run does or how
// it is recorded. The key itself and doctor_first are excluded.
func requestFingerprint(configFP string, req SubmitRequest) string {
	type fields struct {
		Config      string            `json:"config"`
		Format      string            `json:"format"`
		Name        *string           `json:"name"`
		Labels      map[string]string `json:"labels"`
		TimeoutSecs *int64            `json:"timeout_secs"`
		Clock       *string           `json:"clock"`
		Concurrency *int              `json:"concurrency"`
		Callback    json.RawMessage   `json:"callback"`
	}
	labels := req.Labels
	if len(labels) == 0 {
		labels = nil
	}
	// encoding/json sorts map keys, so equal label sets encode equally.
	b, _ := json.Marshal(fields{
		Config: configFP, Format: req.ConfigFormat, Name: req.Name, Labels: labels,
		TimeoutSecs: req.TimeoutSecs, Clock: req.Clock, Concurrency: req.Concurrency,
		Callback: req.Callback,
	})
	return sha256Hex(b)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (r *Runner) redactor(plan *pipeline.Plan) *redact.Redactor {
	return redact.New(plan.Secrets, r.cfg.Secrets)
}

// Closing reports whether Shutdown has begun.
func (r *Runner) Closing() bool { return r.isClosing() }

func (r *Runner) isClosing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

// gauges publishes the queue depth and in-flight count.
func (r *Runner) gauges() {
	if r.metrics == nil {
		return
	}
	r.mu.Lock()
	q, f := r.queued, r.inFlight
	r.mu.Unlock()
	r.metrics.QueueDepth.Set(float64(q))
	r.metrics.InFlight.Set(float64(f))
}

// Stats is a snapshot of the local queue.
type Stats struct {
	Queued, InFlight, MaxQueued, MaxConcurrent int
}

// Stats returns the local queue's occupancy.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{Queued: r.queued, InFlight: r.inFlight, MaxQueued: r.cfg.MaxQueued, MaxConcurrent: r.cfg.MaxConcurrent}
}

// RetryAfter is the Retry-After to advertise with ErrQueueFull.
func (r *Runner) RetryAfter() time.Duration { return r.cfg.QueueFullRetryAfter }
