package db

import (
	"context"
	"time"
)

func (s *store) Purge(ctx context.Context, p PurgePolicy) (PurgeReport, error) {
	now := s.now()
	before := func(keep time.Duration) *time.Time {
		if keep <= 0 {
			return nil
		}
		t := now.Add(-keep)
		return &t
	}
	rep, err := s.d.Purge(ctx, &PurgeParams{
		RunsFinishedBefore: before(p.TerminalRuns),
		ClaimsBefore:       before(p.IdempotencyClaims),
		InstancesBefore:    before(p.Instances),
		AuditBefore:        before(p.Audit),
	})
	return failed(ctx, "purge", rep, err)
}
