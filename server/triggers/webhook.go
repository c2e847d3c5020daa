package triggers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Errors of a webhook call.
var (
	// ErrUnknownTrigger: no enabled webhook trigger has the name (or the
	// server has no triggers file).
	ErrUnknownTrigger = errors.New("no webhook trigger of that name")
)

// CallError is a webhook call the trigger cannot take as it is (a method
// it does not accept, a body its config cannot read): the caller's to fix.
type CallError struct{ msg string }

func (e *CallError) Error() string { return e.msg }

func callErrorf(format string, args ...any) *CallError {
	return &CallError{msg: fmt.Sprintf(format, args...)}
}

// Call is one request to a webhook trigger.
type Call struct {
	Method string
	Header http.Header
	Query  url.Values
	// Body is the request body, already bounded by the server's body limit.
	Body     []byte
	SourceIP *string
}

// Fired is what a webhook call came to: a run (new, or replayed for a
// repeated dedupe_header value), or nothing, coalesced by the debounce.
type Fired struct {
	Coalesced bool
	Run       Accepted
}

// maxDedupeKey is the longest dedupe_header value taken as an idempotency
// key (the API's bound on idempotency keys).
const maxDedupeKey = 256

// Fire fires the webhook trigger called name with call. A fire within
// debounce_secs of the last one that started a run on this server is
// coalesced; the dedupe_header's value, when the request carries it, is
// the run's idempotency key.
func (s *Service) Fire(ctx context.Context, name string, call Call) (Fired, error) {
	set := s.Set()
	t := set.Lookup(name)
	if t == nil || !t.Enabled || t.Kind != KindWebhook {
		return Fired{}, ErrUnknownTrigger
	}
	method := strings.ToUpper(call.Method)
	if !slices.Contains(t.methods, method) {
		return Fired{}, callErrorf("method %s not allowed for webhook trigger %q (it takes %s)", method, name, strings.Join(t.methods, ", "))
	}
	var key *string
	if t.dedupeHeader != "" {
		if v := call.Header.Get(t.dedupeHeader); v != "" {
			if len(v) > maxDedupeKey {
				return Fired{}, callErrorf("header %s: longer than %d bytes", t.dedupeHeader, maxDedupeKey)
			}
			key = &v
		}
	}
	now := s.cfg.Now()
	e := newEvent(t, now)
	e.fields["method"] = method
	e.body, e.header, e.query = call.Body, call.Header, call.Query
	cfg, err := bind(t.config, e)
	if err != nil {
		return Fired{}, callErrorf("%v", err)
	}
	release, ok := s.debounceMark(t)
	if !ok {
		s.cfg.Metrics.Coalesced(t.Name, t.Kind)
		return Fired{Coalesced: true}, nil
	}
	run := s.run(t, e, cfg)
	run.IdempotencyKey = key
	run.Actor.SourceIP = call.SourceIP
	acc, err := s.cfg.Submitter.Submit(ctx, run)
	if err != nil {
		// The window opens with a run, not with a failed try.
		release()
		var rej *RejectedError
		if !errors.As(err, &rej) {
			s.failed(t, err)
		} else {
			s.cfg.Metrics.Failed(t.Name, t.Kind)
		}
		return Fired{}, err
	}
	if acc.Replayed {
		s.cfg.Metrics.Coalesced(t.Name, t.Kind)
	} else {
		s.cfg.Metrics.Fired(t.Name, t.Kind)
	}
	s.succeeded(t, !acc.Replayed)
	return Fired{Run: acc}, nil
}

// debounceMark opens t's debounce window now, unless one is open: false
// means the fire is coalesced. release undoes the mark, for a fire that
// then started no run. Concurrent fires are judged one at a time, so only
// one of them opens a window.
func (s *Service) debounceMark(t *Trigger) (release func(), ok bool) {
	if t.debounce <= 0 {
		return func() {}, true
	}
	s.state.Lock()
	defer s.state.Unlock()
	now := s.cfg.Now()
	prev, had := s.debounce[t.Name]
	if had && now.Sub(prev) < t.debounce {
		return nil, false
	}
	s.debounce[t.Name] = now
	return func() {
		s.state.Lock()
		defer s.state.Unlock()
		if s.debounce[t.Name].Equal(now) {
			if had {
				s.debounce[t.Name] = prev
			} else {
				delete(s.debounce, t.Name)
			}
		}
	}, true
}
