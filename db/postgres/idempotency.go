package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// claimAttempts bounds the retries of a claim whose snapshot was overtaken by
// a concurrent claim, takeover or release of the same key.
const claimAttempts = 8

var errClaimRace = errors.New("the key kept changing hands during the claim")

// IdempotencyClaim atomically claims key for runID.
func (s *Store) IdempotencyClaim(ctx context.Context, key, fingerprint, runID string, window time.Duration) (db.Claim, error) {
	const op = "idempotency claim"
	t := now()
	var expiredBefore *time.Time
	if window > 0 {
		e := t.Add(-window)
		expiredBefore = &e
	}
	for range claimAttempts {
		row, err := s.q.IdempotencyClaim(ctx, dbsqlc.IdempotencyClaimParams{
			Key: key, RunID: runID, Fingerprint: fingerprint, Now: t, ExpiredBefore: expiredBefore,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			continue // held by a claim committed after the snapshot
		}
		if err != nil {
			return db.Claim{}, fail(op, err)
		}
		if !row.Fresh && expiredBefore != nil && row.ClaimedAt.Before(*expiredBefore) {
			continue // an expired claim someone else just took over
		}
		switch {
		case row.Fresh:
			return db.Claim{Outcome: db.ClaimFresh}, nil
		case row.Fingerprint == fingerprint:
			return db.Claim{Outcome: db.ClaimReplay, RunID: row.RunID}, nil
		default:
			return db.Claim{Outcome: db.ClaimConflict}, nil
		}
	}
	return db.Claim{}, &db.Error{Op: op, Transience: db.Transient, Err: errClaimRace}
}

// IdempotencyRelease deletes the claims pointing at runID.
func (s *Store) IdempotencyRelease(ctx context.Context, runID string) error {
	return fail("idempotency release", s.q.IdempotencyRelease(ctx, runID))
}
