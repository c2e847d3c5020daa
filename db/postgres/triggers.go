package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

func (d *driver) TriggerArm(ctx context.Context, trigger, fingerprint string, now time.Time) (time.Time, error) {
	return result(d.q.TriggerArm(ctx, dbsqlc.TriggerArmParams{TriggerName: trigger, Fingerprint: fingerprint, Now: now}))
}

func (d *driver) TriggerNewestFire(ctx context.Context, trigger string) (time.Time, error) {
	return result(d.q.TriggerFireNewest(ctx, trigger))
}

func (d *driver) TriggerFired(ctx context.Context, trigger string, keys []string) ([]string, error) {
	return result(d.q.TriggerFiresKnown(ctx, dbsqlc.TriggerFiresKnownParams{TriggerName: trigger, Keys: keys}))
}

func (d *driver) TriggerPrune(ctx context.Context, trigger string, before time.Time) (int, error) {
	return count(d.q.TriggerFiresPrune(ctx, dbsqlc.TriggerFiresPruneParams{TriggerName: trigger, Before: before}))
}
