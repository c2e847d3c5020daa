package triggers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// watcher runs one schedule or object_arrival trigger on this server: a
// loop of steps, each of which looks (the schedule's due slots, the
// directory's files) and fires what is due. Any member may fire any event:
// the fire row written with the run decides which one does, so members
// need no leader and a member's death loses nothing another can fire.
type watcher struct {
	s *Service
	t *Trigger
	// since is when this server started watching the trigger with its
	// current settings: slots after it fall while a member watches, the
	// ones before it during a downtime.
	since time.Time
	// armedAt is since when the history has the trigger armed, zero until
	// the first step reads it.
	armedAt time.Time
	// failures counts the consecutive steps that failed, for the backoff.
	failures int

	// schedule: the slots (Unix seconds) refused for what their run is,
	// not tried again.
	refusedSlots map[int64]bool
	// object_arrival: what the previous listing saw, the files known to
	// have fired, and those refused.
	seen    map[string]fileState
	known   map[string]bool
	refused map[string]bool
	// lastPrune is when the schedule's old fires were last pruned.
	lastPrune time.Time
}

func newWatcher(s *Service, t *Trigger) *watcher {
	return &watcher{
		s: s, t: t, since: s.cfg.Now(), refusedSlots: map[int64]bool{},
		seen: map[string]fileState{}, known: map[string]bool{}, refused: map[string]bool{},
	}
}

// Bounds of a watcher's pace.
const (
	// maxWait is the longest a schedule sleeps between looks, so a clock
	// that jumps is noticed.
	maxWait = time.Minute
	// maxBackoff caps the wait after failed steps.
	maxBackoff = time.Minute
)

func (w *watcher) run(ctx context.Context) {
	for {
		wait := w.step(ctx, w.s.cfg.Now())
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// step looks once and fires what is due at now, and returns how long to
// wait for the next look.
func (w *watcher) step(ctx context.Context, now time.Time) time.Duration {
	var next time.Duration
	var err error
	if w.armedAt.IsZero() {
		w.armedAt, err = w.s.cfg.Store.TriggerArm(ctx, w.t.Name, w.t.fingerprint)
	}
	if err == nil {
		switch w.t.Kind {
		case KindSchedule:
			next, err = w.scheduleStep(ctx, now)
		case KindObjectArrival:
			next, err = w.objectStep(ctx, now)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0
		}
		w.failures++
		w.s.failed(w.t, err)
		return w.backoff()
	}
	w.failures = 0
	return next
}

// backoff doubles from the trigger's pace (a second for a schedule) up to
// maxBackoff.
func (w *watcher) backoff() time.Duration {
	base := time.Second
	if w.t.Kind == KindObjectArrival {
		base = w.t.poll
	}
	d := base << min(w.failures, 16)
	return min(max(d, base), max(maxBackoff, base))
}

// maxSlotsPerStep bounds the slots one step fires, so a server that was
// paused for long catches up over several steps.
const maxSlotsPerStep = 100

// scheduleStep fires the schedule's due slots: every slot after the last
// one fired (and after the trigger was armed) that fell while this server
// watched, and of those that fell before, during a downtime, the newest
// only.
func (w *watcher) scheduleStep(ctx context.Context, now time.Time) (time.Duration, error) {
	after := w.armedAt.Add(-time.Nanosecond)
	last, err := w.s.cfg.Store.TriggerNewestFire(ctx, w.t.Name)
	switch {
	case err == nil:
		if !last.Before(after) {
			after = last
		}
	case !errors.Is(err, db.ErrNotFound):
		return 0, err
	}
	for _, slot := range dueSlots(w.t.schedule, after, w.since, now, maxSlotsPerStep) {
		if w.refusedSlots[slot.Unix()] {
			continue
		}
		if out := w.fireSlot(ctx, slot, now); out == transient {
			return 0, fmt.Errorf("slot %s was not fired; trying again", slot.In(w.t.location).Format(time.RFC3339))
		} else if out == rejected {
			w.refusedSlots[slot.Unix()] = true
		}
	}
	for s := range w.refusedSlots {
		if s <= after.Unix() {
			delete(w.refusedSlots, s)
		}
	}
	w.prune(ctx, now)
	w.s.succeeded(w.t, false)
	next := w.t.schedule.Next(now)
	if next.IsZero() {
		return maxWait, nil
	}
	return min(max(next.Sub(w.s.cfg.Now()), 0), maxWait), nil
}

func (w *watcher) fireSlot(ctx context.Context, slot, now time.Time) fireOutcome {
	local := slot.In(w.t.location).Format(time.RFC3339)
	e := newEvent(w.t, now)
	e.fields["slot"] = local
	fire := db.TriggerFire{
		Trigger: w.t.Name, Key: slot.UTC().Format(time.RFC3339), Kind: db.TriggerKindSchedule, Subject: local, EventAt: slot,
	}
	return w.s.submit(ctx, w.t, e, fire, &local)
}

// pruneEvery is how often a schedule's fires older than the retention are
// deleted.
const pruneEvery = time.Hour

func (w *watcher) prune(ctx context.Context, now time.Time) {
	if w.s.cfg.Retention <= 0 || now.Sub(w.lastPrune) < pruneEvery {
		return
	}
	w.lastPrune = now
	if _, err := w.s.cfg.Store.TriggerPrune(ctx, w.t.Name, now.Add(-w.s.cfg.Retention)); err != nil {
		w.s.log.Warn("prune a schedule's old fires", "trigger", w.t.Name, "error", err)
	}
}

// Schedule is the part of a cron schedule dueSlots needs.
type Schedule interface {
	// Next returns the first slot after t, or zero when there is none.
	Next(t time.Time) time.Time
}

// dueSlots returns, oldest first, the slots to fire at now of a schedule
// whose last fire (or arming) was after: every slot in (after, now] from
// since on, preceded by the newest one before since, if any. At most limit
// slots are returned (the oldest of them); the rest are due at the next
// step.
func dueSlots(s Schedule, after, since, now time.Time, limit int) []time.Time {
	var out []time.Time
	if after.Before(since) {
		if missed := newestBefore(s, after, minTime(since, now.Add(time.Nanosecond))); !missed.IsZero() {
			out = append(out, missed)
		}
		after = maxTime(after, since.Add(-time.Nanosecond))
	}
	for slot := s.Next(after); !slot.IsZero() && !slot.After(now) && len(out) < limit; slot = s.Next(slot) {
		out = append(out, slot)
	}
	return out
}

// newestBefore returns the newest slot in (after, before), or zero: it
// widens a window back from before until a slot falls in it, so a slot
// far back costs a few steps, not one per slot between.
func newestBefore(s Schedule, after, before time.Time) time.Time {
	for _, back := range []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour, 8 * 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 5 * 367 * 24 * time.Hour} {
		from := maxTime(before.Add(-back), after)
		slot := s.Next(from)
		if !slot.IsZero() && slot.Before(before) {
			for n := s.Next(slot); !n.IsZero() && n.Before(before); n = s.Next(n) {
				slot = n
			}
			return slot
		}
		if !from.After(after) {
			break
		}
	}
	return time.Time{}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
