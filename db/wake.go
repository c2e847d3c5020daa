package db

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

func (s *store) Wake(ctx context.Context, topic WakeTopic) error {
	return fail(ctx, "wake", s.d.WakeNotify(ctx, string(topic)))
}

// Backoff of Listen between listening connections.
const (
	listenRetryFirst = 100 * time.Millisecond
	listenRetryMax   = 5 * time.Second
)

// Listen keeps one listening connection, and opens another with capped,
// jittered backoff whenever it fails: wake-ups are hints, so a lost one
// only delays the listener until its poll, and the listener never gives up.
func (s *store) Listen(ctx context.Context, wake func(WakeTopic)) error {
	delay := listenRetryFirst
	for {
		start := time.Now()
		err := s.d.WakeListen(ctx, func(topic string) { wake(WakeTopic(topic)) })
		if errors.Is(err, ErrNoWakeups) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(start) > listenRetryMax {
			// The connection served a while: its loss is news, not a pattern.
			delay = listenRetryFirst
		}
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, listenRetryMax)
	}
}
