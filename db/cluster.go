package db

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"
)

func (s *store) InstanceHeartbeat(ctx context.Context, hb InstanceHeartbeat) error {
	return fail(ctx, "instance heartbeat", s.d.InstanceHeartbeat(ctx, &InstanceHeartbeatParams{
		InstanceID: s.instanceID, StartedAt: micro(hb.StartedAt), Now: s.now(), Listen: hb.Listen,
		MaxConcurrent: hb.MaxConcurrent, InFlight: hb.InFlight, StateFormat: hb.StateFormat,
	}))
}

func (s *store) InstanceListLive(ctx context.Context, ttl time.Duration) ([]InstanceRecord, error) {
	members, err := s.d.InstanceListLive(ctx, s.now().Add(-ttl))
	return failed(ctx, "instance list live", members, err)
}

func (s *store) InstanceWorkList(ctx context.Context) ([]InstanceWork, error) {
	work, err := s.d.InstanceWorkList(ctx)
	return failed(ctx, "instance work list", work, err)
}

func (s *store) RunClaimPending(ctx context.Context, limit int) ([]RunRecord, error) {
	const op = "run claim pending"
	if limit <= 0 {
		return nil, nil
	}
	now := s.now()
	rows, err := s.d.RunClaimPending(ctx, &RunClaimPendingParams{Owner: s.instanceID, Now: now, LeaseExpiresAt: s.lease(now), Limit: limit})
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	runs, err := decodeRuns(rows)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	slices.SortFunc(runs, func(a, b RunRecord) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.RunID, b.RunID))
	})
	return runs, nil
}

func (s *store) RunRequeueLapsed(ctx context.Context, maxAttempts int) (ReclaimReport, error) {
	rep, err := s.d.RunRequeueLapsed(ctx, s.requeue("run", maxAttempts))
	return failed(ctx, "run requeue lapsed", rep, err)
}

// requeue is the requeue of what (a run or a shard) at the store's now.
func (s *store) requeue(what string, maxAttempts int) *RequeueLapsedParams {
	return &RequeueLapsedParams{Now: s.now(), MaxAttempts: maxAttempts, PoisonFormat: PoisonErrorFormat(what, maxAttempts)}
}

func (s *store) RunRelease(ctx context.Context, runID string) (bool, error) {
	ok, err := s.d.RunRelease(ctx, &RunReleaseParams{RunID: runID, Owner: s.instanceID})
	return failed(ctx, "run release", ok, err)
}

func (s *store) RunSetProgress(ctx context.Context, progress map[string]int64) (int, error) {
	if len(progress) == 0 {
		return 0, nil
	}
	p := &RunSetProgressParams{Owner: s.instanceID, Runs: make([]RunProgress, 0, len(progress))}
	for _, id := range slices.Sorted(maps.Keys(progress)) {
		p.Runs = append(p.Runs, RunProgress{RunID: id, RecordsWritten: progress[id]})
	}
	n, err := s.d.RunSetProgress(ctx, p)
	return failed(ctx, "run set progress", n, err)
}

func (s *store) RunPendingCancellations(ctx context.Context) ([]string, error) {
	ids, err := s.d.RunPendingCancellations(ctx, s.instanceID)
	return failed(ctx, "run pending cancellations", ids, err)
}
