package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

func (d *driver) TriggerArm(ctx context.Context, trigger, fingerprint string, now time.Time) (time.Time, error) {
	arg := dbsqlc.TriggerArmParams{TriggerName: trigger, Fingerprint: fingerprint, Now: micros(now)}
	v, err := writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.TriggerArm(ctx, arg) })
	if err != nil {
		return time.Time{}, err
	}
	return fromMicros(v), nil
}

func (d *driver) TriggerNewestFire(ctx context.Context, trigger string) (time.Time, error) {
	v, err := d.rq.TriggerFireNewest(ctx, trigger)
	if err != nil {
		return time.Time{}, interpretError(err)
	}
	return fromMicros(v), nil
}

// TriggerFired passes the keys as one JSON array, which the statement
// reads with json_each: one prepared statement for any number of keys.
func (d *driver) TriggerFired(ctx context.Context, trigger string, keys []string) ([]string, error) {
	arr, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	got, err := d.rq.TriggerFiresKnown(ctx, dbsqlc.TriggerFiresKnownParams{TriggerName: trigger, Keys: string(arr)})
	return got, interpretError(err)
}

func (d *driver) TriggerPrune(ctx context.Context, trigger string, before time.Time) (int, error) {
	arg := dbsqlc.TriggerFiresPruneParams{TriggerName: trigger, Before: micros(before)}
	return count(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.TriggerFiresPrune(ctx, arg) }))
}
