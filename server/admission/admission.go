// Package admission is the front door of faucet serve's run lifecycle: it
// turns a submission into an accepted run or a refusal. It loads and
// validates the config, reserves a queue slot, runs the doctor_first probes,
// claims the idempotency key, writes the run together with its audit entry,
// and hands the accepted run on (to the local executor, or to the cluster).
// Anything that submits runs (the HTTP API, triggers, templates) calls
// Submit with a typed Request.
package admission

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Config configures admission. Zero values take the defaults below.
type Config struct {
	// MaxQueued runs may wait for an execution slot; more get ErrQueueFull.
	// In cluster mode it bounds the submits in progress only: accepted runs
	// wait in the shared history, not here.
	MaxQueued int
	// IdempotencyRetention is how long an idempotency key stays claimed.
	IdempotencyRetention time.Duration
	// ProbeTimeout bounds doctor probes.
	ProbeTimeout time.Duration
	// QueueFullRetryAfter is the Retry-After advertised with ErrQueueFull.
	QueueFullRetryAfter time.Duration
	// Secrets are masked in every report and record besides the plan's own
	// (the API tokens).
	Secrets []string
	// Cluster writes accepted runs pending, with their raw config, for any
	// member to claim.
	Cluster bool
	// Clock stamps submissions; nil means time.Now.
	Clock func() time.Time
	// CheckCallback validates a submission's completion callback against the
	// server's egress policy and returns it as it is stored; its error is
	// the refusal (a *CallbackError, 422). Nil refuses every callback.
	CheckCallback func(json.RawMessage) (json.RawMessage, error)
	// Logger and Metrics receive what admission reports; nil discards it.
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// Defaults for Config.
const (
	DefaultMaxQueued            = 1000
	DefaultIdempotencyRetention = 24 * time.Hour
	DefaultProbeTimeout         = 10 * time.Second
	DefaultQueueFullRetryAfter  = 5 * time.Second
)

func (c Config) withDefaults() Config {
	if c.MaxQueued <= 0 {
		c.MaxQueued = DefaultMaxQueued
	}
	if c.IdempotencyRetention <= 0 {
		c.IdempotencyRetention = DefaultIdempotencyRetention
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.QueueFullRetryAfter <= 0 {
		c.QueueFullRetryAfter = DefaultQueueFullRetryAfter
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Accepted is a run admission accepted and wrote, handed to a Dispatcher.
type Accepted struct {
	// Record is the run as written.
	Record *db.RunRecord
	// Plan is its loaded config; Redactor masks its secrets.
	Plan     *pipeline.Plan
	Redactor *redact.Redactor
	// Dequeued frees the run's queue slot. A local run holds its slot until
	// it leaves the queue: the executor calls Dequeued once, when the run
	// starts or ends while still queued. Nil in cluster mode, where the run
	// waits in the history instead.
	Dequeued func()
}

// Dispatcher takes the runs admission accepted: the local executor queues
// them for a slot; a cluster member announces them to the cluster. Dispatch
// must not block.
type Dispatcher interface {
	Dispatch(run Accepted)
}

// Request is a run submission.
type Request struct {
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
	// Actor, when set, is who submits: the submission is audited in the
	// run's own write (and a replay on its own), as Action (run.submit when
	// empty).
	Actor  *audit.Actor
	Action string
	// ReplayOf names the dead-letter file a replay run feeds its sink from;
	// the run record keeps it.
	ReplayOf *string

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
	// run is for: it is written in the run's own transaction, and an event
	// that started a run already writes nothing and fails with
	// db.ErrAlreadyFired.
	Fire *db.TriggerFire
}

// TemplateRef names one version of a template.
type TemplateRef struct {
	ID      string
	Version int
}

// Result describes the accepted (or replayed) run.
type Result struct {
	RunID       string
	Status      db.RunStatus
	SubmittedAt time.Time
	// Replay is true when an idempotency key matched an existing run.
	Replay bool
	// Fingerprint is the config fingerprint, recorded in the audit log.
	Fingerprint string
	Warnings    []string
}

// Stats is a snapshot of the queue.
type Stats struct {
	Queued, MaxQueued int
}

// Service admits runs.
type Service struct {
	cfg      Config
	store    db.Store
	pipes    Pipelines
	dispatch Dispatcher
	audit    *audit.Recorder

	mu      sync.Mutex
	queued  int // reserved queue slots: submits in progress and local runs waiting for a slot
	closing bool
	// recording holds runs whose idempotency claim is fresh but whose record
	// is not yet written; a replay of the key waits for it.
	recording map[string]chan struct{}
}

// New returns the admission service over store, loading configs with pipes
// and handing accepted runs to dispatch.
func New(cfg Config, store db.Store, pipes Pipelines, dispatch Dispatcher, rec *audit.Recorder) *Service {
	return &Service{
		cfg: cfg.withDefaults(), store: store, pipes: pipes, dispatch: dispatch, audit: rec,
		recording: map[string]chan struct{}{},
	}
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Start opens intake. Admission runs nothing in the background.
func (s *Service) Start(context.Context) error { return nil }

// Stop closes intake: every later Submit is ErrShuttingDown. Submits in
// progress complete.
func (s *Service) Stop() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}

// Closing reports whether intake is closed.
func (s *Service) Closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Stats returns the queue's occupancy.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Queued: s.queued, MaxQueued: s.cfg.MaxQueued}
}

// RetryAfter is the Retry-After to advertise with ErrQueueFull.
func (s *Service) RetryAfter() time.Duration { return s.cfg.QueueFullRetryAfter }

// Submit validates a submission, reserves a queue slot, runs the doctor_first
// probes, claims the idempotency key and writes the run record together with
// its audit entry, then dispatches the run. A local run is written queued;
// in cluster mode it is written pending, with its raw config, for any
// member's claim loop.
func (s *Service) Submit(ctx context.Context, req Request) (Result, error) {
	if s.Closing() {
		return Result{}, ErrShuttingDown
	}
	// The run's clock: the submit instant (the store keeps microseconds,
	// so the response says what a read returns), or the submission's.
	submittedAt := s.cfg.Clock().UTC().Truncate(time.Microsecond)
	now := submittedAt
	if req.Clock != nil {
		t, err := time.Parse(time.RFC3339, *req.Clock)
		if err != nil {
			return Result{}, &ConfigError{Err: fmt.Errorf("clock %q is not an RFC 3339 time", *req.Clock)}
		}
		// Normalized, so equal clocks written differently fingerprint
		// equally; the offset is kept, since ${now.date} renders the date
		// there.
		clock := t.Format(time.RFC3339Nano)
		now, req.Clock = t, &clock
	}
	if len(req.Callback) > 0 {
		if s.cfg.CheckCallback == nil {
			return Result{}, &CallbackError{Err: errors.New("callback: this server delivers no completion callbacks")}
		}
		cb, err := s.cfg.CheckCallback(req.Callback)
		if err != nil {
			return Result{}, &CallbackError{Err: err}
		}
		req.Callback = cb
	}
	plan, err := loadMasked(s.pipes, req, now)
	if err != nil {
		return Result{}, err
	}
	plan.Secrets = append(plan.Secrets, req.Secrets...)
	red := s.redactor(plan)

	// Reserve first: everything below (probes, claims) is bounded by the
	// queue, and a fresh idempotency claim is always followed by a run.
	res, err := s.reserve()
	if err != nil {
		return Result{}, err
	}
	defer res.release()

	var report json.RawMessage
	if req.DoctorFirst {
		if report, err = s.doctor(ctx, plan, red); err != nil {
			return Result{}, err
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
		replay, err := s.claim(ctx, *req.IdempotencyKey, requestFingerprint(configFP, req), runID)
		if err != nil {
			return Result{}, err
		}
		if replay != nil {
			replay.Fingerprint = configFP
			if req.Actor != nil {
				s.audit.Record(ctx, *req.Actor, submitted(req.Action, replay.RunID, configFP))
			}
			return *replay, nil
		}
		defer s.recorded(runID)
	}

	rec := s.record(runID, req, plan, report, submittedAt)
	var entry *db.AuditEntry
	if req.Actor != nil {
		e := s.audit.Entry(*req.Actor, submitted(req.Action, runID, configFP))
		entry = &e
	}
	if err := s.write(ctx, rec, entry, req.Fire); err != nil {
		if req.IdempotencyKey != nil {
			if relErr := s.store.IdempotencyRelease(context.WithoutCancel(ctx), runID); relErr != nil {
				s.cfg.Logger.Warn("release idempotency claim after failed record write", "run_id", runID, "error", relErr)
			}
		}
		if db.Retriable(err) {
			s.cfg.Logger.Warn("write run record", "run_id", runID, "error", err)
			return Result{}, unavailable("the run history did not accept the run record; retry")
		}
		return Result{}, fmt.Errorf("write run record: %w", err)
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.RunsSubmitted.Inc()
	}
	warnings := warnings(s.pipes, plan, s.cfg.Cluster)
	for _, w := range warnings {
		s.cfg.Logger.Warn("submission warning", "run_id", runID, "warning", w)
	}
	run := Accepted{Record: rec, Plan: plan, Redactor: red}
	if !s.cfg.Cluster {
		res.kept = true
		run.Dequeued = res.free
	}
	s.dispatch.Dispatch(run)
	return Result{RunID: runID, Status: rec.Status, SubmittedAt: rec.SubmittedAt, Fingerprint: configFP, Warnings: warnings}, nil
}

// write writes the run record with its audit entry and, for a run a
// trigger's event started, the event's fire.
func (s *Service) write(ctx context.Context, rec *db.RunRecord, entry *db.AuditEntry, fire *db.TriggerFire) error {
	if fire != nil {
		return s.store.RunSubmitFired(ctx, rec, entry, *fire)
	}
	return s.store.RunSubmit(ctx, rec, entry)
}

// submitted is the audited action of a submission of runID: name, or
// run.submit.
func submitted(name, runID, fingerprint string) audit.Action {
	if name == "" {
		name = "run.submit"
	}
	return audit.Action{Name: name, RunID: &runID, Fingerprint: &fingerprint, Result: audit.ResultOK}
}

// record is the run record a submission writes.
func (s *Service) record(runID string, req Request, plan *pipeline.Plan, report json.RawMessage, submittedAt time.Time) *db.RunRecord {
	status := db.StatusQueued
	if s.cfg.Cluster {
		status = db.StatusPending
	}
	format := req.ConfigFormat
	rec := &db.RunRecord{
		RunID: runID, Name: req.Name, Labels: req.Labels, Status: status,
		SubmittedAt:    submittedAt,
		Invocations:    []db.InvocationRecord{},
		IdempotencyKey: req.IdempotencyKey, DoctorReport: report, TimeoutSecs: req.TimeoutSecs,
		Clock: req.Clock, Concurrency: req.Concurrency, Callback: req.Callback, ConfigFormat: &format,
		ReplayOf: req.ReplayOf,
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
	if shards, _ := ShardCount(s.pipes, plan); s.cfg.Cluster || shards > 0 {
		// Raw, as submitted: the claiming member (or, for a sharded run, the
		// executor of each shard) interpolates it with its own environment,
		// so no resolved secret is ever stored.
		rec.ConfigBody = &req.Config
	}
	return rec
}

func (s *Service) redactor(plan *pipeline.Plan) *redact.Redactor {
	return redact.New(plan.Secrets, s.cfg.Secrets)
}

// reservation is a queue slot, freed once unless handed to the run.
type reservation struct {
	s    *Service
	once sync.Once
	kept bool
}

func (v *reservation) release() {
	if !v.kept {
		v.free()
	}
}

func (v *reservation) free() {
	v.once.Do(func() {
		v.s.mu.Lock()
		v.s.queued--
		v.s.mu.Unlock()
		v.s.gauge()
	})
}

func (s *Service) reserve() (*reservation, error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if s.queued >= s.cfg.MaxQueued {
		s.mu.Unlock()
		return nil, ErrQueueFull
	}
	s.queued++
	s.mu.Unlock()
	s.gauge()
	return &reservation{s: s}, nil
}

// gauge publishes the queue depth.
func (s *Service) gauge() {
	if s.cfg.Metrics == nil {
		return
	}
	s.mu.Lock()
	q := s.queued
	s.mu.Unlock()
	s.cfg.Metrics.QueueDepth.Set(float64(q))
}

// claim claims an idempotency key for runID. A nil result with a nil error
// means the claim is fresh and the caller must call recorded(runID) once
// the record is written (or failed to be).
func (s *Service) claim(ctx context.Context, key, fp, runID string) (*Result, error) {
	s.mu.Lock()
	s.recording[runID] = make(chan struct{})
	s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		c, err := s.store.IdempotencyClaim(ctx, key, fp, runID, s.cfg.IdempotencyRetention)
		if err != nil {
			s.recorded(runID)
			if db.Retriable(err) {
				s.cfg.Logger.Warn("claim idempotency key", "error", err)
				return nil, unavailable("the run history did not answer the idempotency claim; retry")
			}
			return nil, fmt.Errorf("claim idempotency key: %w", err)
		}
		switch c.Outcome {
		case db.ClaimFresh:
			return nil, nil
		case db.ClaimConflict:
			s.recorded(runID)
			return nil, ErrIdempotencyConflict
		}
		rec, err := s.awaitRecord(ctx, c.RunID)
		if err == nil {
			s.recorded(runID)
			if s.cfg.Metrics != nil {
				s.cfg.Metrics.IdempotencyReplays.Inc()
			}
			return &Result{RunID: rec.RunID, Status: rec.Status, SubmittedAt: rec.SubmittedAt, Replay: true}, nil
		}
		if !errors.Is(err, db.ErrNotFound) || attempt > 0 {
			s.recorded(runID)
			return nil, fmt.Errorf("read replayed run %s: %w", c.RunID, err)
		}
		// The key points at a run that no longer exists (deleted or purged
		// while its claim lived on): free the key and claim it afresh.
		if err := s.store.IdempotencyRelease(ctx, c.RunID); err != nil {
			s.recorded(runID)
			return nil, fmt.Errorf("release stale idempotency claim: %w", err)
		}
	}
}

// awaitRecord reads the run a replayed key points at. The run may have been
// claimed an instant ago by a concurrent submit that has not written its
// record yet: wait for that submit when it is ours, poll briefly otherwise.
func (s *Service) awaitRecord(ctx context.Context, runID string) (*db.RunRecord, error) {
	s.mu.Lock()
	wait := s.recording[runID]
	s.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	delay := 10 * time.Millisecond
	for i := 0; ; i++ {
		rec, err := s.store.RunGet(ctx, runID)
		if err == nil || !errors.Is(err, db.ErrNotFound) || i == 6 {
			return rec, err
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
			delay *= 2
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

func (s *Service) recorded(runID string) {
	s.mu.Lock()
	ch := s.recording[runID]
	delete(s.recording, runID)
	s.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// requestFingerprint is the idempotency identity of a submission: the config
// fingerprint plus every request field that changes what the run does or how
// it is recorded. The key itself and doctor_first are excluded.
func requestFingerprint(configFP string, req Request) string {
	type fields struct {
		Config      string            `json:"config"`
		Format      string            `json:"format"`
		Name        *string           `json:"name"`
		Labels      map[string]string `json:"labels"`
		TimeoutSecs *int64            `json:"timeout_secs"`
		Clock       *string           `json:"clock"`
		Concurrency *int              `json:"concurrency"`
		Callback    json.RawMessage   `json:"callback"`
		ReplayOf    *string           `json:"replay_of,omitempty"`
	}
	labels := req.Labels
	if len(labels) == 0 {
		labels = nil
	}
	// encoding/json sorts map keys, so equal label sets encode equally.
	b, _ := json.Marshal(fields{
		Config: configFP, Format: req.ConfigFormat, Name: req.Name, Labels: labels,
		TimeoutSecs: req.TimeoutSecs, Clock: req.Clock, Concurrency: req.Concurrency,
		Callback: req.Callback, ReplayOf: req.ReplayOf,
	})
	return sha256Hex(b)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
