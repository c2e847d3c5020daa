package sqlite

import (
	"context"
	"errors"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

func (d *driver) LeaderElect(ctx context.Context, p *db.LeaderElectParams) (bool, error) {
	arg := dbsqlc.LeaderElectParams{LeaderID: p.LeaderID, Now: micros(p.Now), ExpiresAt: micros(p.ExpiresAt)}
	_, err := writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.LeaderElect(ctx, arg) })
	if errors.Is(err, db.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (d *driver) LeaderResign(ctx context.Context, leaderID string) (bool, error) {
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.LeaderResign(ctx, leaderID) }))
}

// WakeNotify does nothing: SQLite has no notifications, and the members
// sharing a file find pending work by polling.
func (d *driver) WakeNotify(context.Context, string) error { return nil }

// WakeListen has nothing to listen to.
func (d *driver) WakeListen(context.Context, func(string)) error { return db.ErrNoWakeups }
