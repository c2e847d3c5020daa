package db

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrAlreadyFired: the slot or file a run was submitted for had started a
// run already (RunSubmitFired wrote nothing).
var ErrAlreadyFired = errors.New("the trigger already fired for this event")

// Trigger kinds whose fires the history keeps.
const (
	TriggerKindSchedule      = "schedule"
	TriggerKindObjectArrival = "object_arrival"
)

// TriggerFire is the event a trigger fired a run for, stored once per
// (Trigger, Key): a schedule's slot or one version of a file.
type TriggerFire struct {
	Trigger string
	// Key identifies the event within the trigger: the slot in RFC 3339
	// (UTC), or a digest of a file's path, modification time and size.
	Key string
	// Kind is TriggerKindSchedule or TriggerKindObjectArrival.
	Kind string
	// Subject is what a person reads: the slot in the trigger's zone, the
	// file's path.
	Subject string
	// EventAt is the slot, or the file's modification time.
	EventAt time.Time
}

// TriggerStore owns the state of the triggers a server fires by itself, so
// that every member of a cluster and every restart share it: since when a
// trigger is armed, and which events it fired (the fires themselves are
// written with their runs, by RunSubmitFired).
type TriggerStore interface {
	// RunSubmitFired is RunSubmit for a run started by a trigger's event:
	// the fire is written in the same transaction as the run, and when
	// the event has a fire already nothing is written and the error is
	// ErrAlreadyFired. Concurrent submits of one event, on any process,
	// have one winner.
	RunSubmitFired(ctx context.Context, rec *RunRecord, audit *AuditEntry, fire TriggerFire) error
	// TriggerArm records that the trigger is watched with settings of the
	// given fingerprint and returns since when: the first arm, or the
	// first with another fingerprint, is now; an arm with the fingerprint
	// stored keeps its time.
	TriggerArm(ctx context.Context, trigger, fingerprint string) (time.Time, error)
	// TriggerNewestFire returns the newest EventAt the trigger fired for;
	// ErrNotFound when it never fired.
	TriggerNewestFire(ctx context.Context, trigger string) (time.Time, error)
	// TriggerFired returns which of keys the trigger fired for.
	TriggerFired(ctx context.Context, trigger string, keys []string) (map[string]bool, error)
	// TriggerPrune deletes the trigger's fires of events before cutoff,
	// but never its newest, and returns how many it deleted.
	TriggerPrune(ctx context.Context, trigger string, before time.Time) (int, error)
}

// TriggerDriver stores trigger state.
type TriggerDriver interface {
	// TriggerArm upserts the arm row and returns the armed_at in force.
	TriggerArm(ctx context.Context, trigger, fingerprint string, now time.Time) (time.Time, error)
	// TriggerNewestFire reads the newest event_at; ErrNotFound for none.
	TriggerNewestFire(ctx context.Context, trigger string) (time.Time, error)
	// TriggerFired returns the keys among keys that have a fire.
	TriggerFired(ctx context.Context, trigger string, keys []string) ([]string, error)
	// TriggerPrune deletes fires before before except the newest.
	TriggerPrune(ctx context.Context, trigger string, before time.Time) (int, error)
}

// TriggerFireRow is a fire as RunInsert writes it with its run.
type TriggerFireRow struct {
	TriggerFire
	RunID   string
	FiredAt time.Time
}

// maxFiredKeys bounds the keys of one TriggerFired statement.
const maxFiredKeys = 500

func (s *store) RunSubmitFired(ctx context.Context, rec *RunRecord, audit *AuditEntry, fire TriggerFire) error {
	const op = "run submit fired"
	if fire.Trigger == "" || fire.Key == "" || (fire.Kind != TriggerKindSchedule && fire.Kind != TriggerKindObjectArrival) {
		return invalid(op, fmt.Errorf("fire of run %s: trigger, key and a known kind are required", rec.RunID))
	}
	fire.EventAt = micro(fire.EventAt)
	return s.submit(ctx, op, rec, audit, &TriggerFireRow{TriggerFire: fire, RunID: rec.RunID, FiredAt: s.now()})
}

func (s *store) TriggerArm(ctx context.Context, trigger, fingerprint string) (time.Time, error) {
	t, err := s.d.TriggerArm(ctx, trigger, fingerprint, s.now())
	return failed(ctx, "trigger arm", t, err)
}

func (s *store) TriggerNewestFire(ctx context.Context, trigger string) (time.Time, error) {
	t, err := s.d.TriggerNewestFire(ctx, trigger)
	return failed(ctx, "trigger newest fire", t, err)
}

func (s *store) TriggerFired(ctx context.Context, trigger string, keys []string) (map[string]bool, error) {
	out := make(map[string]bool)
	for len(keys) > 0 {
		n := min(len(keys), maxFiredKeys)
		got, err := s.d.TriggerFired(ctx, trigger, keys[:n])
		if err != nil {
			return nil, fail(ctx, "trigger fired", err)
		}
		for _, k := range got {
			out[k] = true
		}
		keys = keys[n:]
	}
	return out, nil
}

func (s *store) TriggerPrune(ctx context.Context, trigger string, before time.Time) (int, error) {
	n, err := s.d.TriggerPrune(ctx, trigger, micro(before))
	return failed(ctx, "trigger prune", n, err)
}
