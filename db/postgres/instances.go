package postgres

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// InstanceHeartbeat upserts this instance's membership row.
func (s *Store) InstanceHeartbeat(ctx context.Context, hb db.InstanceHeartbeat) error {
	return fail("instance heartbeat", s.q.InstanceHeartbeat(ctx, dbsqlc.InstanceHeartbeatParams{
		InstanceID:    s.instanceID,
		StartedAt:     micro(hb.StartedAt),
		Now:           now(),
		Listen:        hb.Listen,
		MaxConcurrent: int32(hb.MaxConcurrent),
		InFlight:      int32(hb.InFlight),
		StateFormat:   int32(hb.StateFormat),
	}))
}

// InstanceListLive lists members heartbeated within ttl.
func (s *Store) InstanceListLive(ctx context.Context, ttl time.Duration) ([]db.InstanceRecord, error) {
	rows, err := s.q.InstanceListLive(ctx, now().Add(-ttl))
	if err != nil {
		return nil, fail("instance list live", err)
	}
	out := make([]db.InstanceRecord, len(rows))
	for i, r := range rows {
		out[i] = db.InstanceRecord{
			InstanceID:    r.InstanceID,
			StartedAt:     r.StartedAt.UTC(),
			LastHeartbeat: r.LastHeartbeat.UTC(),
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
	n, err := s.q.InstancePrune(ctx, now().Add(-olderThan))
	return int(n), fail("instance prune", err)
}
