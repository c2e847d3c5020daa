package sqlite

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// InstanceHeartbeat upserts this instance's membership row.
func (s *Store) InstanceHeartbeat(ctx context.Context, hb db.InstanceHeartbeat) error {
	params := dbsqlc.InstanceHeartbeatParams{
		InstanceID:    s.instanceID,
		StartedAt:     micros(hb.StartedAt),
		LastHeartbeat: micros(now()),
		Listen:        hb.Listen,
		MaxConcurrent: int64(hb.MaxConcurrent),
		InFlight:      int64(hb.InFlight),
		StateFormat:   int64(hb.StateFormat),
	}
	return s.writeOne(ctx, "instance heartbeat", func(ctx context.Context, q *dbsqlc.Queries) error {
		return q.InstanceHeartbeat(ctx, params)
	})
}

// InstanceListLive lists members heartbeated within ttl.
func (s *Store) InstanceListLive(ctx context.Context, ttl time.Duration) ([]db.InstanceRecord, error) {
	rows, err := s.rq.InstanceListLive(ctx, micros(now().Add(-ttl)))
	if err != nil {
		return nil, wrap(ctx, "instance list live", err)
	}
	out := make([]db.InstanceRecord, len(rows))
	for i, r := range rows {
		out[i] = db.InstanceRecord{
			InstanceID:    r.InstanceID,
			StartedAt:     fromMicros(r.StartedAt),
			LastHeartbeat: fromMicros(r.LastHeartbeat),
			Listen:        r.Listen,
			MaxConcurrent: int(r.MaxConcurrent),
			InFlight:      int(r.InFlight),
			StateFormat:   int(r.StateFormat),
		}
	}
	return out, nil
}

// InstancePrune deletes members not heartbeated within olderThan.
func (s *Store) InstancePrune(ctx context.Context, olderThan time.Duration) (int, error) {
	before := micros(now().Add(-olderThan))
	n, err := writeValue(ctx, s, "instance prune", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.InstancePrune(ctx, before)
	})
	return int(n), err
}
