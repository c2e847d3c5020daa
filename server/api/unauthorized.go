package api

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bounds of the audit entries of rejected tokens: each source address gets
// a burst of unauthorizedBurst, then one every unauthorizedEvery, so a
// flood of bad tokens leaves a trace without filling the audit log.
const (
	unauthorizedBurst = 10
	unauthorizedEvery = 6 * time.Second
	// unauthorizedSources bounds the sources remembered; past it they are
	// forgotten together (their budgets start afresh).
	unauthorizedSources = 10_000
)

// sourceLimiter rations an action per source address; the zero value is
// ready to use.
type sourceLimiter struct {
	mu      sync.Mutex
	sources map[string]*rate.Limiter
}

// allow reports whether source may do the action once more now.
func (l *sourceLimiter) allow(source string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sources == nil || len(l.sources) >= unauthorizedSources {
		l.sources = map[string]*rate.Limiter{}
	}
	lim := l.sources[source]
	if lim == nil {
		lim = rate.NewLimiter(rate.Every(unauthorizedEvery), unauthorizedBurst)
		l.sources[source] = lim
	}
	return lim.Allow()
}
