package sdk

import (
	"context"
	"sync"
	"time"
)

// lazyDeadline is a context that ends at a deadline, or when it is
// released, and arms a timer only once something waits on its Done channel.
// A Describer bounded by a timeout of context.WithTimeout put a timer in and
// took it out again on every session's end, which cost a trivial run more
// than what most describers do (work out a URI from their config, never
// looking at the context); those now pay for no timer. It carries the
// values of the context it is made from, without its cancellation.
type lazyDeadline struct {
	context.Context
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{}
	timer *time.Timer
	err   error
}

// withLazyDeadline returns parent's values bounded by timeout, and the
// release that ends it once the bounded call returned.
func withLazyDeadline(parent context.Context, timeout time.Duration) (*lazyDeadline, func()) {
	c := &lazyDeadline{Context: context.WithoutCancel(parent), deadline: time.Now().Add(timeout)}
	return c, func() { c.end(context.Canceled) }
}

// Deadline is the deadline the context was made with.
func (c *lazyDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

// Done is closed at the deadline or at the release, whichever comes first;
// the first call arms the timer that closes it.
func (c *lazyDeadline) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		switch {
		case c.err != nil:
			close(c.done)
		case !time.Now().Before(c.deadline):
			c.endLocked(context.DeadlineExceeded)
		default:
			c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
		}
	}
	return c.done
}

// Err is context.DeadlineExceeded from the deadline on, context.Canceled
// after the release, and nil before either, whether or not Done was asked
// for.
func (c *lazyDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

func (c *lazyDeadline) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(err)
}

// endLocked ends the context with err, once: Done is closed if it was
// handed out, and the timer, if armed, stopped.
func (c *lazyDeadline) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}
