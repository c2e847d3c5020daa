// Package triggers starts pipeline runs on their own, from the triggers of
// a server's --triggers file: a webhook call (POST/PUT /v1/triggers/NAME),
// a file arriving in a directory (object_arrival), a cron schedule's slot.
// Every run goes through the path every submitted run takes (a Submitter);
// what must survive a restart or be shared by the members of a cluster
// (since when a trigger is armed, which slots and files fired) is kept in
// the history, and a slot's or a file's fire is written in the same
// transaction as its run, so each starts exactly one run.
package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/audit"
	"github.com/faucet-dev/faucet/server/auth"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Submitter admits a run through the path every submitted run takes: a
// queue slot, the idempotency key, the run record with its audit entry
// (and its trigger fire, in one transaction).
type Submitter interface {
	Submit(ctx context.Context, r Run) (Accepted, error)
}

// SubmitFunc is a Submitter as a function.
type SubmitFunc func(ctx context.Context, r Run) (Accepted, error)

// Submit calls f.
func (f SubmitFunc) Submit(ctx context.Context, r Run) (Accepted, error) { return f(ctx, r) }

// Run is a run a trigger fires, for the Submitter.
type Run struct {
	// Config is the trigger's pipeline config with its ${trigger.*}
	// references bound, as JSON.
	Config         string
	Name           *string
	Labels         map[string]string
	TimeoutSecs    *int64
	IdempotencyKey *string
	// Clock is the run's logical now (RFC 3339): a schedule's slot.
	Clock *string
	// Actor is who the submission is audited as: principal trigger:NAME.
	Actor *audit.Actor
	// Fire, when set, is the slot or file the run is for: the Submitter
	// writes it with the run, and fails with db.ErrAlreadyFired when the
	// event started a run already.
	Fire *db.TriggerFire
}

// Accepted is an admitted (or, for a repeated idempotency key, replayed)
// run.
type Accepted struct {
	RunID       string
	Status      db.RunStatus
	SubmittedAt time.Time
	Replayed    bool
	Warnings    []string
}

// RejectedError is a submit refused for what the run is (its config does
// not load, a doctor probe failed, an idempotency key was reused): firing
// the same event again fails the same way, so a watcher does not retry it.
// A Submitter wraps such refusals in it; any other error is taken as
// passing (a full queue, an unreachable history) and retried.
type RejectedError struct{ Err error }

func (e *RejectedError) Error() string { return e.Err.Error() }
func (e *RejectedError) Unwrap() error { return e.Err }

// Store is what triggers keep in the history.
type Store interface {
	TriggerArm(ctx context.Context, trigger, fingerprint string) (time.Time, error)
	TriggerNewestFire(ctx context.Context, trigger string) (time.Time, error)
	TriggerFired(ctx context.Context, trigger string, keys []string) (map[string]bool, error)
	TriggerPrune(ctx context.Context, trigger string, before time.Time) (int, error)
}

// Config configures a Service.
type Config struct {
	Store     Store
	Submitter Submitter
	// Metrics counts fires; nil counts nothing.
	Metrics *metrics.Triggers
	Log     *slog.Logger
	// Retention is how long a schedule's fires are kept (its newest
	// always is); zero keeps them.
	Retention time.Duration
	// Now is the services' clock; nil means time.Now.
	Now func() time.Time
}

// Service runs the triggers of one file at a time; Reload swaps in
// another's.
type Service struct {
	cfg Config
	log *slog.Logger

	// mu serializes Start, Reload and Stop.
	mu  sync.Mutex
	cur *active
	// state guards health and the debounce marks, which outlive a reload
	// for the triggers kept.
	state    sync.Mutex
	health   map[string]*Health
	debounce map[string]time.Time
}

// active is the running triggers of one file.
type active struct {
	set      *Set
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	watchers map[string]*watcher
}

// New returns a Service; Start starts a file's triggers.
func New(cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log, health: map[string]*Health{}, debounce: map[string]time.Time{}}
}

// Start starts the watchers of set's schedule and object_arrival triggers
// and serves its webhooks. The watchers run until Stop (ctx only carries
// values).
func (s *Service) Start(ctx context.Context, set *Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swap(ctx, set)
}

// Reload stops the running triggers and starts set's in their place.
// Nothing is lost between the two: which slots and files fired is in the
// history, and a trigger whose settings did not change keeps watching from
// when it started (its missed slots are not a downtime's).
func (s *Service) Reload(ctx context.Context, set *Set) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swap(ctx, set)
}

// Stop stops every watcher and waits for them.
func (s *Service) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swap(context.Background(), nil)
}

// Set returns the triggers in force; nil without a file.
func (s *Service) Set() *Set {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	return s.cur.set
}

func (s *Service) swap(ctx context.Context, set *Set) {
	old := s.cur
	carried := map[string]*watcher{}
	if old != nil {
		old.cancel()
		old.wg.Wait()
		carried = old.watchers
	}
	s.cur = nil
	s.resetState(set)
	if set == nil {
		return
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a := &active{set: set, cancel: cancel, watchers: map[string]*watcher{}}
	for _, t := range set.Triggers {
		if !t.Enabled || t.Kind == KindWebhook {
			continue
		}
		w := newWatcher(s, t)
		if prev := carried[t.Name]; prev != nil && prev.t.fingerprint == t.fingerprint {
			w.since = prev.since
		}
		a.watchers[t.Name] = w
		a.wg.Go(func() { w.run(wctx) })
	}
	s.cur = a
	s.log.Info("triggers started", "file", set.Path, "triggers", len(set.Triggers), "watchers", len(a.watchers))
}

// resetState keeps the health and debounce marks of the triggers set
// keeps (same name and kind) and starts the others afresh.
func (s *Service) resetState(set *Set) {
	s.state.Lock()
	defer s.state.Unlock()
	health := map[string]*Health{}
	debounce := map[string]time.Time{}
	if set != nil {
		for _, t := range set.Triggers {
			if !t.Enabled {
				continue
			}
			h := s.health[t.Name]
			if h == nil || h.Type != t.Kind {
				h = &Health{Name: t.Name, Type: t.Kind, Healthy: true}
			} else if mark, ok := s.debounce[t.Name]; ok {
				debounce[t.Name] = mark
			}
			health[t.Name] = h
			s.cfg.Metrics.Init(t.Name, t.Kind, h.Healthy)
		}
	}
	for name, h := range s.health {
		if kept := health[name]; kept != h {
			s.cfg.Metrics.Forget(name, h.Type)
		}
	}
	s.health, s.debounce = health, debounce
	s.cfg.Metrics.Active(len(health))
}

// Health is how one trigger fares, as /readyz reports it.
type Health struct {
	Name string
	Type string
	// Healthy is false after unhealthyAfter consecutive failures, until a
	// success.
	Healthy             bool
	ConsecutiveFailures int
	LastFire            *time.Time
	LastError           *string
}

// unhealthyAfter consecutive failures mark a trigger unhealthy.
const unhealthyAfter = 3

// Health returns every enabled trigger's health, by name.
func (s *Service) Health() []Health {
	s.state.Lock()
	defer s.state.Unlock()
	out := make([]Health, 0, len(s.health))
	for _, h := range s.health {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// succeeded records a step or fire that went through; fired says it
// started a run.
func (s *Service) succeeded(t *Trigger, fired bool) {
	s.state.Lock()
	defer s.state.Unlock()
	h := s.health[t.Name]
	if h == nil {
		return
	}
	h.Healthy, h.ConsecutiveFailures, h.LastError = true, 0, nil
	if fired {
		now := s.cfg.Now().UTC()
		h.LastFire = &now
	}
	s.cfg.Metrics.Health(t.Name, t.Kind, true)
}

// failed records a failure of t: a fire that started no run, or a watcher
// that could not look.
func (s *Service) failed(t *Trigger, err error) {
	s.cfg.Metrics.Failed(t.Name, t.Kind)
	s.log.Warn("trigger failed", "trigger", t.Name, "type", t.Kind, "error", err)
	s.state.Lock()
	defer s.state.Unlock()
	h := s.health[t.Name]
	if h == nil {
		return
	}
	h.ConsecutiveFailures++
	msg := err.Error()
	h.LastError = &msg
	if h.ConsecutiveFailures >= unhealthyAfter {
		h.Healthy = false
	}
	s.cfg.Metrics.Health(t.Name, t.Kind, h.Healthy)
}

// principal is who a trigger's runs are submitted by, in the audit log.
func principal(t *Trigger) string { return "trigger:" + t.Name }

// fireOutcome is what one fire of a watched event came to.
type fireOutcome int

const (
	// fired: the event started a run here.
	fired fireOutcome = iota
	// taken: the event had started a run already (another member, or
	// before a restart).
	taken
	// rejected: the run was refused for what it is; the event is not
	// tried again by this watcher.
	rejected
	// transient: the run could not be submitted now; the watcher tries
	// again at its next step.
	transient
)

// submit fires one event of a watched trigger: binds its config, submits
// the run with its fire, and says what came of it.
func (s *Service) submit(ctx context.Context, t *Trigger, e *event, fire db.TriggerFire, clock *string) fireOutcome {
	cfg, err := bind(t.config, e)
	if err != nil {
		s.failed(t, fmt.Errorf("%s: %w", fire.Subject, err))
		return rejected
	}
	run := s.run(t, e, cfg)
	run.Clock, run.Fire = clock, &fire
	acc, err := s.cfg.Submitter.Submit(ctx, run)
	var rej *RejectedError
	switch {
	case err == nil:
		s.cfg.Metrics.Fired(t.Name, t.Kind)
		s.succeeded(t, true)
		s.log.Info("trigger fired", "trigger", t.Name, "type", t.Kind, "event", fire.Subject, "run_id", acc.RunID)
		return fired
	case errors.Is(err, db.ErrAlreadyFired):
		return taken
	case errors.As(err, &rej):
		s.failed(t, fmt.Errorf("%s: %w", fire.Subject, err))
		return rejected
	}
	s.failed(t, fmt.Errorf("%s: %w", fire.Subject, err))
	return transient
}

// run is the submission of t's config for event e, less its fire.
func (s *Service) run(t *Trigger, e *event, config []byte) Run {
	name := runName(t.runName, e)
	labels := map[string]string{"faucet.trigger.name": t.Name, "faucet.trigger.type": t.Kind}
	for _, f := range []string{"object_key", "slot", "method"} {
		if v, ok := e.fields[f]; ok && len(v) <= maxLabelValue {
			labels["faucet.trigger."+f] = v
		}
	}
	for k, v := range t.labels {
		labels[k] = v
	}
	return Run{
		Config: string(config), Name: &name, Labels: labels, TimeoutSecs: t.timeout,
		Actor: &audit.Actor{Principal: principal(t), Role: auth.Operator.String()},
	}
}

// maxLabelValue is the longest label value a run takes (the API's bound).
const maxLabelValue = 1024
