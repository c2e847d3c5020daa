package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

// Request is a backfill as POST /v1/backfill takes it.
type Request struct {
	Config       string
	ConfigFormat string
	// From (inclusive) and To (exclusive) are RFC 3339 or dates.
	From, To string
	// Window is the units' length; nil is one unit for the whole range.
	Window *string
	// Timezone is the IANA zone of dates and of the units' clocks; nil is
	// UTC.
	Timezone *string
	// Name is the runs' base name; nil takes the config's name.
	Name        *string
	Labels      map[string]string
	TimeoutSecs *int64
}

// Error is a backfill that cannot be planned: malformed input (400).
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func badf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Backfill is a planned backfill, ready to submit.
type Backfill struct {
	// Hash is the backfill's identity (the runs' backfill label, the
	// middle of their idempotency keys); Descriptor is what it hashes.
	Hash, Descriptor string
	Units            []Unit
	// Runs are the units' submissions, in unit order.
	Runs []Run
}

// Run is one unit's submission.
type Run struct {
	// Config is the unit's document with its ${backfill.*} tokens
	// substituted, as JSON.
	Config string
	// Name is {name}-backfill-{unit}; IdempotencyKey backfill:{hash}:{unit}.
	Name, IdempotencyKey string
	// Clock is the unit's start, the run's ${now}.
	Clock       string
	Labels      map[string]string
	TimeoutSecs *int64
}

// Accepted is a unit's run as the submit path answered.
type Accepted struct {
	RunID    string
	Status   string
	Replayed bool
}

// UnitResult is one unit's outcome.
type UnitResult struct {
	Unit
	// Submitted: the unit has its run (created now, or replayed).
	Submitted bool
	Run       Accepted
	// Error says why an unsubmitted unit was not.
	Error string
}

// Result is what submitting a backfill did, unit by unit.
type Result struct {
	Hash, Descriptor string
	Units            []UnitResult
}

// Submitted counts the units that have their run.
func (r Result) Submitted() int {
	n := 0
	for _, u := range r.Units {
		if u.Submitted {
			n++
		}
	}
	return n
}

// Prepare plans a backfill and renders each unit's submission. Every
// refusal is an *Error, and nothing is submitted.
func Prepare(req Request) (*Backfill, error) {
	loc := time.UTC
	if req.Timezone != nil && *req.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(*req.Timezone); err != nil || *req.Timezone == "Local" {
			return nil, badf("timezone %q is not an IANA time zone (America/New_York, Europe/Berlin, UTC)", *req.Timezone)
		}
	}
	var step *Step
	if req.Window != nil {
		s, err := ParseWindow(*req.Window)
		if err != nil {
			return nil, &Error{Msg: err.Error()}
		}
		step = &s
	}
	from, err := ParseBoundary(req.From, loc)
	if err != nil {
		return nil, badf("from: %v", err)
	}
	to, err := ParseBoundary(req.To, loc)
	if err != nil {
		return nil, badf("to: %v", err)
	}
	units, err := Plan(from, to, step, loc)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}

	format := pipeline.FormatYAML
	if req.ConfigFormat == "json" {
		format = pipeline.FormatJSON
	}
	doc, err := pipeline.ParseDocument([]byte(req.Config), format)
	if err != nil {
		return nil, err
	}
	root, ok := doc.Tree().(map[string]any)
	if !ok {
		return nil, badf("the config is not a mapping")
	}
	if unscoped := unscopedSources(root); len(unscoped) > 0 {
		return nil, badf("%s never use ${backfill.start}, ${backfill.end} (or another ${backfill.…}) or ${now…}, "+
			"so every unit would read the same data; scope the source to the unit's window", strings.Join(unscoped, " and "))
	}
	name := "pipeline"
	if req.Name != nil && *req.Name != "" {
		name = *req.Name
	} else if n, ok := root["name"].(string); ok && n != "" {
		name = n
	}
	b := &Backfill{Descriptor: Descriptor(from, to, step, name), Units: units}
	b.Hash = Hash(b.Descriptor)
	for _, u := range units {
		tree, err := substitute(root, tokens(u), nil)
		if err != nil {
			return nil, err
		}
		unitName := name + "-backfill-" + u.ID
		m := tree.(map[string]any)
		m["name"] = unitName
		// A unit may run again (a replay after an expired key, a takeover):
		// ask for what faucet's sinks keep; write_mode: upsert makes it
		// idempotent.
		m["delivery"] = pipeline.DefaultDelivery
		config, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("render the config of unit %s: %w", u.ID, err)
		}
		labels := maps.Clone(req.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels["backfill"], labels["backfill_unit"] = b.Hash, u.ID
		b.Runs = append(b.Runs, Run{
			Config: string(config), Name: unitName, IdempotencyKey: "backfill:" + b.Hash + ":" + u.ID,
			Clock: pipeline.Timestamp(u.Start), Labels: labels, TimeoutSecs: req.TimeoutSecs,
		})
	}
	return b, nil
}

// Submit submits the units in order through submit. The first unit's error
// is returned as it is: its run was refused, so nothing was written. After
// a refusal of a later unit (a full queue, most likely) the rest are not
// submitted, and the result says so unit by unit: posting the same
// backfill again replays the units submitted and submits the rest.
func (b *Backfill) Submit(ctx context.Context, submit func(context.Context, Run) (Accepted, error)) (Result, error) {
	res := Result{Hash: b.Hash, Descriptor: b.Descriptor, Units: make([]UnitResult, len(b.Units))}
	var stopped error
	for i, u := range b.Units {
		res.Units[i].Unit = u
		if stopped != nil {
			res.Units[i].Error = "not submitted: " + stopped.Error()
			continue
		}
		acc, err := submit(ctx, b.Runs[i])
		if err != nil {
			if i == 0 {
				return Result{}, err
			}
			stopped = err
			res.Units[i].Error = err.Error()
			continue
		}
		res.Units[i].Submitted, res.Units[i].Run = true, acc
	}
	return res, nil
}

// ErrCallback refuses a callback on a backfill: it would fire once per unit
// run, which is not what a caller waiting for the backfill means, and
// dropping it would leave them waiting forever.
var ErrCallback = errors.New("callback is not accepted on /v1/backfill: a backfill submits one run per window unit, " +
	"so no single run is its completion; follow the units with GET /v1/runs (every unit run has the label backfill=HASH), " +
	"or submit the units with POST /v1/runs, each with its own callback")

// unscopedSources names the sources that use no token of the window:
// their units would each move the same records. A source may take its
// window through a var, and a matrix row inherits the pipeline's source.
func unscopedSources(root map[string]any) []string {
	p, _ := root["pipeline"].(map[string]any)
	if scoped(root["vars"]) || scoped(p["source"]) {
		return nil
	}
	rows, _ := root["matrix"].([]any)
	if len(rows) == 0 {
		return []string{"pipeline.source"}
	}
	var out []string
	for i, r := range rows {
		if row, _ := r.(map[string]any); !scoped(row["source"]) && !scoped(row["vars"]) {
			out = append(out, fmt.Sprintf("the source of matrix[%d]", i))
		}
	}
	return out
}

// scoped reports whether a value uses a token of the window.
func scoped(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, tokenRef) || usesNow(x)
	case map[string]any:
		for _, c := range x {
			if scoped(c) {
				return true
			}
		}
	case []any:
		for _, c := range x {
			if scoped(c) {
				return true
			}
		}
	}
	return false
}

// usesNow reports whether s holds a ${now…} reference.
func usesNow(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "${now")
		if j < 0 {
			return false
		}
		i += j + len("${now")
		if i < len(s) && strings.ContainsRune("}.:+-", rune(s[i])) {
			return true
		}
	}
}

// tokenRef opens a ${backfill.*} token.
const tokenRef = "${backfill."

// substitute returns v with every ${backfill.NAME} in its string values
// replaced; $${ is the pipeline's literal ${ and stays. An unknown token
// is an *Error at its path.
func substitute(v any, tok map[string]string, at []any) (any, error) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, tokenRef) {
			return x, nil
		}
		var b strings.Builder
		for i := 0; i < len(x); {
			switch {
			case strings.HasPrefix(x[i:], "$${"):
				b.WriteString("$${")
				i += 3
			case strings.HasPrefix(x[i:], tokenRef):
				end := strings.IndexByte(x[i:], '}')
				if end < 0 {
					return nil, badf("%s: unterminated ${backfill.…} token", pipeline.PathString(at...))
				}
				name := x[i+len(tokenRef) : i+end]
				val, ok := tok[name]
				if !ok {
					return nil, badf("%s: unknown token ${backfill.%s}; the tokens are %s", pipeline.PathString(at...), name, tokenNames)
				}
				b.WriteString(val)
				i += end + 1
			default:
				b.WriteByte(x[i])
				i++
			}
		}
		return b.String(), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			s, err := substitute(c, tok, append(at[:len(at):len(at)], k))
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			s, err := substitute(c, tok, append(at[:len(at):len(at)], i))
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}
