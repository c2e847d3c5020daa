package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// RunSubmit writes a new run and its submission's audit entry in one
// transaction.
func (s *Store) RunSubmit(ctx context.Context, rec *db.RunRecord, audit *db.AuditEntry) error {
	const op = "run submit"
	p, err := s.upsertParams(rec)
	if err != nil {
		return wrap(ctx, op, err)
	}
	if audit == nil {
		return s.writeOne(ctx, op, func(ctx context.Context, q *dbsqlc.Queries) error {
			return q.RunUpsert(ctx, p)
		})
	}
	a := auditParams(*audit)
	return s.write(ctx, op, func(ctx context.Context, q *dbsqlc.Queries) error {
		if err := q.RunUpsert(ctx, p); err != nil {
			return err
		}
		return q.AuditInsert(ctx, a)
	})
}

// RunStart moves a queued run this instance owns to running.
func (s *Store) RunStart(ctx context.Context, runID string, startedAt time.Time) (bool, error) {
	t := fromMicros(micros(startedAt))
	params := dbsqlc.RunStartParams{
		StartedAt: ptr(micros(t)), StartedAtText: jsonTime(t), LeaseExpiresAt: s.lease(now()), RunID: runID, Owner: s.owner,
	}
	n, err := writeValue(ctx, s, "run start", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunStart(ctx, params)
	})
	return n == 1, err
}

// RunFinish writes a terminal record and the run's pending log lines in one
// transaction.
func (s *Store) RunFinish(ctx context.Context, f db.RunFinal) (bool, error) {
	const op = "run finish"
	if !f.Record.Status.Terminal() {
		return false, permanent(op, fmt.Errorf("finish run %s: status %q is not terminal", f.Record.RunID, f.Record.Status))
	}
	var lines string
	if len(f.Lines) > 0 {
		var err error
		if lines, err = encodeLines(f.Record.RunID, f.Lines); err != nil {
			return false, wrap(ctx, op, err)
		}
	}
	var write func(ctx context.Context, q *dbsqlc.Queries) (bool, error)
	if f.Owned {
		p, err := s.finalizeParams(f.Record)
		if err != nil {
			return false, wrap(ctx, op, err)
		}
		write = func(ctx context.Context, q *dbsqlc.Queries) (bool, error) {
			n, err := q.RunFinalizeOwned(ctx, p)
			return n == 1, err
		}
	} else {
		stamped := *f.Record
		if stamped.FinishedAt == nil {
			t := now()
			stamped.FinishedAt = &t
		}
		p, err := s.upsertParams(&stamped)
		if err != nil {
			return false, wrap(ctx, op, err)
		}
		write = func(ctx context.Context, q *dbsqlc.Queries) (bool, error) { return true, q.RunUpsert(ctx, p) }
	}
	var won bool
	err := s.write(ctx, op, func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		if won, err = write(ctx, q); err != nil || lines == "" {
			return err
		}
		return appendLines(ctx, q, f.Record.RunID, lines, f.Lines[len(f.Lines)-1].Seq, f.MaxLinesPerRun)
	})
	return won, err
}

// RunShard marks a running run sharded and inserts its shards in one
// transaction.
func (s *Store) RunShard(ctx context.Context, runID string, shards []db.ShardInsert) (bool, error) {
	const op = "run shard"
	var b string
	if len(shards) > 0 {
		var err error
		if b, err = encodeShards(runID, shards); err != nil {
			return false, wrap(ctx, op, err)
		}
	}
	var marked bool
	err := s.write(ctx, op, func(ctx context.Context, q *dbsqlc.Queries) error {
		marked = false
		cancelRequested, err := q.RunMarkSharded(ctx, dbsqlc.RunMarkShardedParams{RunID: runID, Owner: s.owner})
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		marked = true
		if b == "" {
			return nil
		}
		if _, err := q.ShardInsert(ctx, dbsqlc.ShardInsertParams{RunID: runID, Shards: b}); err != nil || !cancelRequested {
			return err
		}
		// No claimer takes the shards of a run with a cancel request.
		_, err = q.ShardCancelPending(ctx, dbsqlc.ShardCancelPendingParams{RunID: runID, Now: ptr(micros(now()))})
		return err
	})
	return marked, err
}

// RunSetProgress records the live counts of this instance's running runs in
// one transaction.
func (s *Store) RunSetProgress(ctx context.Context, progress map[string]int64) (int, error) {
	if len(progress) == 0 {
		return 0, nil
	}
	var updated int64
	err := s.write(ctx, "run set progress", func(ctx context.Context, q *dbsqlc.Queries) error {
		updated = 0
		for id, n := range progress {
			c, err := q.RunSetProgress(ctx, dbsqlc.RunSetProgressParams{RecordsWritten: n, RunID: id, Owner: s.owner})
			if err != nil {
				return err
			}
			updated += c
		}
		return nil
	})
	return int(updated), err
}

// RunRelease hands a running run this instance owns back to pending.
func (s *Store) RunRelease(ctx context.Context, runID string) (bool, error) {
	params := dbsqlc.RunReleaseParams{RunID: runID, Owner: s.owner}
	n, err := writeValue(ctx, s, "run release", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.RunRelease(ctx, params)
	})
	return n == 1, err
}

// ShardRelease hands a running shard this instance owns back to pending.
func (s *Store) ShardRelease(ctx context.Context, runID, shardID string) (bool, error) {
	params := dbsqlc.ShardReleaseParams{RunID: runID, ShardID: shardID, Owner: s.owner}
	n, err := writeValue(ctx, s, "shard release", func(ctx context.Context, q *dbsqlc.Queries) (int64, error) {
		return q.ShardRelease(ctx, params)
	})
	return n == 1, err
}
