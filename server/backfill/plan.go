// Package backfill turns a time window over a pipeline config into one run
// per window unit (POST /v1/backfill): each unit's config gets its
// ${backfill.*} tokens, its run a name and an idempotency key derived from
// the window, and its clock the unit's start, so re-posting the same
// backfill replays the units already submitted and submits the rest.
package backfill

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones by name on hosts without a zone database

	"github.com/faucet-dev/faucet/pipeline"
)

// MaxUnits bounds a backfill's units: a tiny window over a long range is a
// mistake, not a workload.
const MaxUnits = 10000

// Step is how a window advances: a fixed duration, or calendar days in the
// backfill's time zone (so a day stays midnight to midnight across a
// daylight saving change).
type Step struct {
	Fixed time.Duration
	Days  int
	// text is the step as the range's descriptor writes it.
	text string
}

// ParseWindow reads a window: 45s, 30m, 6h (or a bare number of seconds)
// are fixed durations; 1d and 1w are calendar days and weeks.
func ParseWindow(s string) (Step, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("window %q is not a duration: write 45s, 30m, 6h, 1d or 1w", s)
	if s == "" {
		return Step{}, bad
	}
	num, unit := s, "s"
	if c := s[len(s)-1]; c < '0' || c > '9' {
		num, unit = s[:len(s)-1], s[len(s)-1:]
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return Step{}, bad
	}
	if n <= 0 {
		return Step{}, fmt.Errorf("window %q must be positive", s)
	}
	// Large enough for any range a backfill can plan, small enough that no
	// sum overflows.
	if n > 1_000_000_000 {
		return Step{}, fmt.Errorf("window %q is too long", s)
	}
	switch unit {
	case "s", "m", "h":
		d := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit] * time.Duration(n)
		return Step{Fixed: d, text: strconv.FormatInt(int64(d/time.Second), 10)}, nil
	case "d":
		return Step{Days: n, text: s}, nil
	case "w":
		return Step{Days: 7 * n, text: s}, nil
	}
	return Step{}, bad
}

// ParseBoundary reads a boundary of the range: RFC 3339, or a date meaning
// midnight in loc.
func ParseBoundary(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.In(loc), nil
	}
	if d, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return d, nil
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339 (2026-06-01T00:00:00Z) or a date (2026-06-01)", s)
}

// Unit is one window of a backfill: [Start, End), in the backfill's zone.
type Unit struct {
	// ID is the start in UTC, compact (20260601T000000Z): the run's name
	// and idempotency key end in it.
	ID         string
	Start, End time.Time
}

// Plan cuts [from, to) into units of step, the last one ending at to; a
// nil step is one unit for the whole range.
func Plan(from, to time.Time, step *Step, loc *time.Location) ([]Unit, error) {
	if !from.Before(to) {
		return nil, fmt.Errorf("from (%s) must be before to (%s)", pipeline.Timestamp(from), pipeline.Timestamp(to))
	}
	var units []Unit
	for cursor := from; cursor.Before(to); {
		if len(units) == MaxUnits {
			return nil, fmt.Errorf("the range holds more than %d units of this window: use a longer window or a shorter range", MaxUnits)
		}
		next := to
		switch {
		case step == nil:
		case step.Days > 0:
			next = cursor.In(loc).AddDate(0, 0, step.Days)
		default:
			next = cursor.Add(step.Fixed)
		}
		if !next.After(cursor) {
			// A zone quirk cannot stall the plan.
			next = cursor.Add(24 * time.Hour)
		}
		end := next
		if end.After(to) {
			end = to
		}
		units = append(units, Unit{ID: cursor.UTC().Format("20060102T150405Z"), Start: cursor.In(loc), End: end.In(loc)})
		cursor = end
	}
	return units, nil
}

// Hash is the 64-bit FNV-1a hash of a range's descriptor, in hex: the
// backfill's stable identity, as the Rust faucet computes it.
func Hash(descriptor string) string {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	h := uint64(offset)
	for i := 0; i < len(descriptor); i++ {
		h ^= uint64(descriptor[i])
		h *= prime
	}
	return fmt.Sprintf("%016x", h)
}

// Descriptor names a range: its boundaries, its window (whole for none)
// and the runs' base name.
func Descriptor(from, to time.Time, step *Step, name string) string {
	window := "whole"
	if step != nil {
		window = step.text
	}
	return fmt.Sprintf("time|%s|%s|%s|%s", pipeline.Timestamp(from), pipeline.Timestamp(to), window, name)
}

// tokens are the ${backfill.*} a config may use, rendered for one unit.
func tokens(u Unit) map[string]string {
	return map[string]string{
		"start":      pipeline.Timestamp(u.Start),
		"end":        pipeline.Timestamp(u.End),
		"start_date": u.Start.Format(time.DateOnly),
		"end_date":   u.End.Format(time.DateOnly),
		"start_unix": strconv.FormatInt(u.Start.Unix(), 10),
		"end_unix":   strconv.FormatInt(u.End.Unix(), 10),
		"unit":       u.ID,
	}
}

// tokenNames lists them, for messages.
const tokenNames = "start, end, start_date, end_date, start_unix, end_unix, unit"
