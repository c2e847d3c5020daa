package db

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// store is the Store over a Driver: the rules every dialect shares, once.
// The domain files (runs.go, cluster.go, shards.go …) hold its methods.
type store struct {
	d          Driver
	instanceID string
	leaseTTL   time.Duration
	clock      func() time.Time
	// batchIDsForgotten is when, in Unix microseconds, this store last
	// had old catalog batch ids forgotten.
	batchIDsForgotten atomic.Int64
}

// NewStore returns the Store over d, configured by opts (defaults applied).
// A dialect's Open returns it over the dialect's driver.
func NewStore(d Driver, opts Options) Store {
	opts = opts.WithDefaults()
	return &store{d: d, instanceID: opts.InstanceID, leaseTTL: opts.LeaseTTL, clock: opts.Clock}
}

func (s *store) InstanceID() string { return s.instanceID }

func (s *store) Dialect() string { return s.d.Dialect() }

func (s *store) Close() error { return s.d.Close() }

func (s *store) Ping(ctx context.Context) error { return fail(ctx, "ping", s.d.Ping(ctx)) }

// now is the store's clock at the precision every dialect keeps.
func (s *store) now() time.Time { return micro(s.clock()) }

// lease is the lease expiry a write at t grants.
func (s *store) lease(t time.Time) time.Time { return t.Add(s.leaseTTL) }

// fail names the operation op in err, keeping the verdict the driver gave
// it, and keeps ctx's error in the chain when ctx ended, so a caller tells
// its own cancellation from a database failure the same way on every
// dialect.
func fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	out := &Error{Op: op, Transience: TransienceOf(err), Err: err}
	if e, ok := err.(*Error); ok && e.Op == "" {
		out.Err = e.Err
	}
	if cause := ctx.Err(); cause != nil {
		if !errors.Is(out.Err, cause) {
			out.Err = fmt.Errorf("%w: %w", cause, out.Err)
		}
		out.Transience = Unknown
	}
	return out
}

// invalid is the error of an argument no retry can fix.
func invalid(op string, err error) error {
	return &Error{Op: op, Transience: Permanent, Err: err}
}

// failed returns v with err named by op, for methods that return a value.
func failed[T any](ctx context.Context, op string, v T, err error) (T, error) {
	return v, fail(ctx, op, err)
}
