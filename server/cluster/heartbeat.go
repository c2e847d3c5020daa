package cluster

import (
	"context"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// heartbeatLoop heartbeats every HeartbeatEvery, and after a failed
// heartbeat sooner, so one lost beat does not put the leases at risk, until
// ctx ends. Each heartbeat also takes part in the election.
func (m *Member) heartbeatLoop(ctx context.Context) {
	trouble := &storeTrouble{log: m.cfg.Logger, duty: "heartbeat"}
	var reported map[string]int64
	defer m.leader.step(ctx, m, false)
	for {
		next, err := m.heartbeat(ctx, reported)
		if ctx.Err() != nil {
			return
		}
		wait := m.cfg.HeartbeatEvery
		if err == nil {
			reported = next
		} else {
			wait = min(wait, m.cfg.LeaseTTL/10)
		}
		trouble.report(err)
		m.leader.attempt(ctx, m)
		t := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-m.elect:
				// The leader resigned: a member may take over now.
				m.leader.attempt(ctx, m)
			case <-t.C:
				break waiting
			}
		}
	}
}

// heartbeat renews this member's leases and membership row, stops what the
// renewal reports this member no longer owns, and records the live counts
// of its runs that changed since the last heartbeat (reported), so peers
// serve them on GET. It returns the counts it has now recorded.
func (m *Member) heartbeat(ctx context.Context, reported map[string]int64) (map[string]int64, error) {
	// Taken before the renewal: work adopted after it may not be in the
	// renewal's answer yet, and must not be judged by it.
	held := m.exec.Owned()
	runs, err := m.store.RunRenewLeases(ctx)
	if err != nil {
		return nil, err
	}
	shards, err := m.store.ShardRenewLeases(ctx)
	if err != nil {
		return nil, err
	}
	m.stopLost(held, runs, shards)
	st := m.exec.Stats()
	if err := m.store.InstanceHeartbeat(ctx, db.InstanceHeartbeat{
		StartedAt: m.started, Listen: m.cfg.Listen, MaxConcurrent: st.MaxConcurrent, InFlight: st.InFlight,
	}); err != nil {
		return nil, err
	}
	current := map[string]int64{}
	changed := map[string]int64{}
	for _, t := range held {
		if n := t.Records(); t.ShardID() == "" && n > 0 {
			current[t.RunID()] = n
			if n != reported[t.RunID()] {
				changed[t.RunID()] = n
			}
		}
	}
	if _, err := m.store.RunSetProgress(ctx, changed); err != nil {
		return nil, err
	}
	members, err := m.store.InstanceListLive(ctx, m.cfg.LeaseTTL)
	if err != nil {
		return nil, err
	}
	if m.cfg.Metrics != nil {
		m.cfg.Metrics.ClusterMembers.Set(float64(len(members)))
	}
	return current, nil
}
