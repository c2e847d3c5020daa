// Package testwait is how tests wait for something another goroutine or
// process does: one polling loop, so every wait backs off the same way and
// says what never happened when it gives up.
package testwait

import (
	"testing"
	"time"
)

// Poll intervals: the first check comes soon, for what happens at once,
// and the interval doubles up to maxInterval, so a long wait costs the
// machine little.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

// Until calls check until it returns nil, and fails t when timeout passes
// first, with the last error check returned, which should say what was
// awaited and what was seen instead. check may call t.Fatal itself for a
// state the wait can never leave.
func Until(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	if err := Wait(timeout, check); err != nil {
		t.Fatalf("after %s: %v", timeout, err)
	}
}

// Wait is Until for code without a testing.TB (a helper process, a
// goroutine): it returns check's last error when timeout passes first.
func Wait(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	interval := firstInterval
	for {
		err := check()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(min(interval, time.Until(deadline)+time.Millisecond))
		interval = min(2*interval, maxInterval)
	}
}
