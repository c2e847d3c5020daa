package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// The writes of a run's own path (submit, start, finish, shard) are each one
// statement: a data-modifying CTE keeps them atomic without the round trips
// of BEGIN and COMMIT.

// RunSubmit writes a new run and its submission's audit entry in one
// statement.
func (s *Store) RunSubmit(ctx context.Context, rec *db.RunRecord, audit *db.AuditEntry) error {
	lease := s.lease()
	_, err := s.writeRun(ctx, "run submit", rec, runWrite{lease: &lease, audit: audit})
	return err
}

// RunStart moves a queued run this instance owns to running.
func (s *Store) RunStart(ctx context.Context, runID string, startedAt time.Time) (bool, error) {
	n, err := s.q.RunStart(ctx, dbsqlc.RunStartParams{
		StartedAt: micro(startedAt), LeaseExpiresAt: s.lease(), RunID: runID, Owner: s.instanceID,
	})
	return n == 1, fail("run start", err)
}

// RunFinish writes a terminal record and the run's pending log lines in one
// statement, then applies the per-run log cap.
func (s *Store) RunFinish(ctx context.Context, f db.RunFinal) (bool, error) {
	const op = "run finish"
	if !f.Record.Status.Terminal() {
		return false, permanent(op, fmt.Errorf("finish run %s: status %q is not terminal", f.Record.RunID, f.Record.Status))
	}
	stamped := *f.Record
	if stamped.FinishedAt == nil {
		t := now()
		stamped.FinishedAt = &t
	}
	won, err := s.writeRun(ctx, op, &stamped, runWrite{fenced: f.Owned, lines: f.Lines})
	if err != nil {
		return false, err
	}
	if len(f.Lines) > 0 && f.MaxLinesPerRun > 0 {
		// The cap is a retention bound, not part of the record: applying it
		// in its own statement keeps the terminal write one round trip.
		start, end := db.LogBlock(f.Lines[len(f.Lines)-1].Seq)
		if err := s.q.RunLogTrim(ctx, dbsqlc.RunLogTrimParams{RunID: stamped.RunID, Now: now(), Keep: int64(f.MaxLinesPerRun), BlockStart: start, BlockEnd: end}); err != nil {
			return won, fail(op, err)
		}
	}
	return won, nil
}

// RunShard marks a running run sharded and inserts its shards in one
// statement.
func (s *Store) RunShard(ctx context.Context, runID string, shards []db.ShardInsert) (bool, error) {
	const op = "run shard"
	payload, err := encodeShards(runID, shards)
	if err != nil {
		return false, fail(op, err)
	}
	n, err := s.q.RunShard(ctx, dbsqlc.RunShardParams{RunID: runID, Owner: s.instanceID, Shards: payload, Now: now()})
	return n == 1, fail(op, err)
}

// RunSetProgress records the live counts of this instance's running runs in
// one statement.
func (s *Store) RunSetProgress(ctx context.Context, progress map[string]int64) (int, error) {
	if len(progress) == 0 {
		return 0, nil
	}
	p := dbsqlc.RunSetProgressParams{Owner: s.instanceID, RunIds: make([]string, 0, len(progress)), Records: make([]int64, 0, len(progress))}
	for id, n := range progress {
		p.RunIds = append(p.RunIds, id)
		p.Records = append(p.Records, n)
	}
	n, err := s.q.RunSetProgress(ctx, p)
	return int(n), fail("run set progress", err)
}

// RunRelease hands a running run this instance owns back to pending.
func (s *Store) RunRelease(ctx context.Context, runID string) (bool, error) {
	n, err := s.q.RunRelease(ctx, dbsqlc.RunReleaseParams{RunID: runID, Owner: s.instanceID})
	return n == 1, fail("run release", err)
}

// ShardRelease hands a running shard this instance owns back to pending.
func (s *Store) ShardRelease(ctx context.Context, runID, shardID string) (bool, error) {
	n, err := s.q.ShardRelease(ctx, dbsqlc.ShardReleaseParams{RunID: runID, ShardID: shardID, Owner: s.instanceID})
	return n == 1, fail("shard release", err)
}
