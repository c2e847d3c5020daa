package db

import (
	"context"
	"time"
)

func (s *store) IdempotencyClaim(ctx context.Context, key, fingerprint, runID string, window time.Duration) (Claim, error) {
	now := s.now()
	p := &IdempotencyClaimParams{Key: key, Fingerprint: fingerprint, RunID: runID, Now: now}
	if window > 0 {
		expired := now.Add(-window)
		p.ExpiredBefore = &expired
	}
	h, err := s.d.IdempotencyClaim(ctx, p)
	switch {
	case err != nil:
		return Claim{}, fail(ctx, "idempotency claim", err)
	case h.Fresh:
		return Claim{Outcome: ClaimFresh}, nil
	case h.Fingerprint == fingerprint:
		return Claim{Outcome: ClaimReplay, RunID: h.RunID}, nil
	}
	return Claim{Outcome: ClaimConflict}, nil
}

func (s *store) IdempotencyRelease(ctx context.Context, runID string) error {
	return fail(ctx, "idempotency release", s.d.IdempotencyRelease(ctx, runID))
}
