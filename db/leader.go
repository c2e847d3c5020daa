package db

import (
	"context"
	"time"
)

func (s *store) LeaderElect(ctx context.Context, ttl time.Duration) (bool, error) {
	now := s.now()
	ok, err := s.d.LeaderElect(ctx, &LeaderElectParams{LeaderID: s.instanceID, Now: now, ExpiresAt: now.Add(ttl)})
	return failed(ctx, "leader elect", ok, err)
}

// LeaderResign wakes the members after a resignation, so the next leader is
// elected at once rather than at its next attempt.
func (s *store) LeaderResign(ctx context.Context) error {
	const op = "leader resign"
	resigned, err := s.d.LeaderResign(ctx, s.instanceID)
	if err != nil || !resigned {
		return fail(ctx, op, err)
	}
	return fail(ctx, op, s.d.WakeNotify(ctx, string(WakeLeader)))
}
