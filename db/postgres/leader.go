package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

func (d *driver) LeaderElect(ctx context.Context, p *db.LeaderElectParams) (bool, error) {
	_, err := d.q.LeaderElect(ctx, dbsqlc.LeaderElectParams{LeaderID: p.LeaderID, Now: p.Now, ExpiresAt: p.ExpiresAt})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, interpretError(err)
}

func (d *driver) LeaderResign(ctx context.Context, leaderID string) (bool, error) {
	return one(d.q.LeaderResign(ctx, leaderID))
}

func (d *driver) WakeNotify(ctx context.Context, topic string) error {
	return interpretError(d.q.WakeNotify(ctx, topic))
}

// WakeListen takes a connection out of the pool for good (LISTEN binds the
// session, so it must never serve another caller) and waits on it.
func (d *driver) WakeListen(ctx context.Context, wake func(string)) error {
	pc, err := d.pool.Acquire(ctx)
	if err != nil {
		return interpretError(err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if err := dbsqlc.New(conn).WakeListen(ctx); err != nil {
		return interpretError(err)
	}
	// Wake-ups sent while no connection listened are lost: look for work.
	wake(string(db.WakeWork))
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return interpretError(err)
		}
		wake(n.Payload)
	}
}
