// Package audit is faucet serve's one audit recorder: every audited action
// (a submit, a cancel, a delete, a doctor call, a denial) is built into an
// entry here and written here, whichever service or handler saw it.
package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/faucet-dev/faucet/db"
)

// Results of audited actions, as the wire format spells them.
const (
	ResultOK     = "ok"
	ResultDenied = "denied"
)

// Actor is who performed an action and from where.
type Actor struct {
	// Principal and Role name the caller as the wire format does.
	Principal, Role string
	// SourceIP is the caller's address, when known.
	SourceIP *string
}

// Action is one audited action.
type Action struct {
	// Name is the action ("run.submit", "run.cancel", "doctor" …).
	Name string
	// RunID and Fingerprint are the run acted on and its config
	// fingerprint, when there is one.
	RunID, Fingerprint *string
	// Result is ResultOK or ResultDenied.
	Result string
}

// Config configures a Recorder.
type Config struct {
	// Store keeps the entries.
	Store db.AuditStore
	// Clock stamps the entries; nil means time.Now.
	Clock func() time.Time
	// Logger receives failures to record.
	Logger *slog.Logger
}

// Recorder builds and writes audit entries.
type Recorder struct {
	store db.AuditStore
	clock func() time.Time
	log   *slog.Logger
}

// New returns the recorder cfg describes.
func New(cfg Config) *Recorder {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{store: cfg.Store, clock: cfg.Clock, log: cfg.Logger}
}

// Entry is the audit entry of act by who, stamped now with a fresh id. A
// caller that writes it together with other rows (a submit writes its entry
// in the run's own transaction) takes it from here; Record writes it alone.
func (r *Recorder) Entry(who Actor, act Action) db.AuditEntry {
	return db.AuditEntry{
		ID:                uuid.Must(uuid.NewV7()).String(),
		Timestamp:         r.clock().UTC(),
		Principal:         who.Principal,
		Role:              who.Role,
		Action:            act.Name,
		RunID:             act.RunID,
		ConfigFingerprint: act.Fingerprint,
		SourceIP:          who.SourceIP,
		Result:            act.Result,
	}
}

// Record writes the entry of act by who. A failure is logged, not returned:
// the action itself already happened, and the caller's request outlives
// neither its answer nor the write (which does not stop with ctx).
func (r *Recorder) Record(ctx context.Context, who Actor, act Action) {
	e := r.Entry(who, act)
	if err := r.store.AuditInsert(context.WithoutCancel(ctx), e); err != nil {
		r.log.Error("write audit entry", "action", e.Action, "principal", e.Principal, "error", err)
	}
}
