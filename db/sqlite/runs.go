package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// RunInsert writes the run alone as one statement, or with its trigger fire
// and its audit entry in one transaction.
func (d *driver) RunInsert(ctx context.Context, p *db.RunInsertParams) error {
	r := &p.Run
	arg := dbsqlc.RunInsertParams{
		RunID: r.RunID, Name: r.Name, Labels: string(r.Labels), Status: string(r.Status),
		SubmittedAt: micros(r.SubmittedAt), StartedAt: microsPtr(r.StartedAt), FinishedAt: microsPtr(r.FinishedAt),
		IdempotencyKey: r.IdempotencyKey, Owner: &p.Owner, LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)),
		Attempt: int64(r.Attempt), RecordsWritten: r.RecordsWritten, Error: r.Error,
		Submission: string(r.Submission), Invocations: textPtr(r.Invocations),
		TemplateID: r.TemplateID, TemplateVersion: int64Ptr(r.TemplateVersion),
	}
	if p.Audit == nil && p.Fire == nil {
		return d.writeOne(ctx, func(ctx context.Context, q *dbsqlc.Queries) error { return q.RunInsert(ctx, arg) })
	}
	return d.writeReplayable(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		if f := p.Fire; f != nil {
			n, err := q.TriggerFireInsert(ctx, dbsqlc.TriggerFireInsertParams{
				TriggerName: f.Trigger, FireKey: f.Key, Kind: f.Kind, Subject: f.Subject, EventAt: micros(f.EventAt),
				RunID: f.RunID, FiredAt: micros(f.FiredAt),
			})
			if err != nil {
				return err
			}
			if n == 0 {
				return &db.Error{Transience: db.Permanent, Err: db.ErrAlreadyFired}
			}
		}
		if err := q.RunInsert(ctx, arg); err != nil {
			return err
		}
		if p.Audit == nil {
			return nil
		}
		return q.AuditInsert(ctx, auditParams(p.Audit))
	})
}

func (d *driver) RunStart(ctx context.Context, p *db.RunStartParams) (bool, error) {
	arg := dbsqlc.RunStartParams{
		StartedAt: ptr(micros(p.StartedAt)), LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)), RunID: p.RunID, Owner: &p.Owner,
	}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.RunStart(ctx, arg) }))
}

// RunFinish writes the run and its lines in one transaction.
func (d *driver) RunFinish(ctx context.Context, p *db.RunFinishParams) (bool, error) {
	r := &p.Run
	var finish func(ctx context.Context, q *dbsqlc.Queries) (bool, error)
	if p.Fenced {
		arg := dbsqlc.RunFinishOwnedParams{
			Status: string(r.Status), StartedAt: microsPtr(r.StartedAt), FinishedAt: microsPtr(r.FinishedAt),
			RecordsWritten: r.RecordsWritten, Error: r.Error, Invocations: textPtr(r.Invocations), RunID: r.RunID, Owner: &p.Owner,
		}
		finish = func(ctx context.Context, q *dbsqlc.Queries) (bool, error) { return one(q.RunFinishOwned(ctx, arg)) }
	} else {
		stored := dbsqlc.RunFinishStoredParams{
			Status: string(r.Status), StartedAt: microsPtr(r.StartedAt), FinishedAt: microsPtr(r.FinishedAt),
			RecordsWritten: r.RecordsWritten, Error: r.Error, Invocations: textPtr(r.Invocations), Owner: &p.Owner, RunID: r.RunID,
		}
		// The run is nearly always stored: update it, and write it whole
		// only when it is not.
		finish = func(ctx context.Context, q *dbsqlc.Queries) (bool, error) {
			if n, err := q.RunFinishStored(ctx, stored); err != nil || n == 1 {
				return true, err
			}
			return true, q.RunFinish(ctx, dbsqlc.RunFinishParams{
				RunID: r.RunID, Name: r.Name, Labels: string(r.Labels), Status: string(r.Status),
				SubmittedAt: micros(r.SubmittedAt), StartedAt: microsPtr(r.StartedAt), FinishedAt: microsPtr(r.FinishedAt),
				IdempotencyKey: r.IdempotencyKey, Owner: &p.Owner, Attempt: int64(r.Attempt), RecordsWritten: r.RecordsWritten,
				Error: r.Error, Submission: string(r.Submission), Invocations: textPtr(r.Invocations),
				TemplateID: r.TemplateID, TemplateVersion: int64Ptr(r.TemplateVersion),
			})
		}
	}
	var won bool
	err := d.writePatient(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		var err error
		if won, err = finish(ctx, q); err != nil {
			return err
		}
		if len(p.Lines) > 0 {
			if err := appendLines(ctx, q, r.RunID, p.Lines, p.Trim); err != nil {
				return err
			}
		}
		for i := range p.Outputs {
			if _, err := q.LocalOutputUpsert(ctx, localOutputArg(&p.Outputs[i])); err != nil {
				return err
			}
		}
		return nil
	})
	return won, err
}

func (d *driver) RunGet(ctx context.Context, runID string) (db.RunRow, error) {
	row, err := d.rq.RunGet(ctx, runID)
	if err != nil {
		return db.RunRow{}, interpretError(err)
	}
	return runRow(row), nil
}

func (d *driver) RunStatus(ctx context.Context, runID string) (db.RunStatus, error) {
	st, err := d.rq.RunStatus(ctx, runID)
	return db.RunStatus(st), interpretError(err)
}

// RunList reads a page in one statement. A template's runs are read
// through the template index (RunListTemplate), statuses runs only pass
// through through the status index (RunListActive), any other filter by
// walking the history newest first.
func (d *driver) RunList(ctx context.Context, p *db.RunListParams) ([]db.RunRow, error) {
	var statuses *string
	if len(p.Statuses) > 0 {
		b, err := json.Marshal(p.Statuses)
		if err != nil {
			return nil, &db.Error{Transience: db.Permanent, Err: err}
		}
		statuses = ptr(string(b))
	}
	var rows []dbsqlc.FaucetRun
	var err error
	switch {
	case p.Template != nil:
		rows, err = d.rq.RunListTemplate(ctx, dbsqlc.RunListTemplateParams{
			Template: p.Template, Statuses: statuses, Name: p.Name, Since: microsPtr(p.Since), Until: microsPtr(p.Until), Cursor: p.Cursor, RowLimit: int64(p.Limit),
		})
	case statuses != nil && !slices.ContainsFunc(p.Statuses, db.RunStatus.Terminal):
		rows, err = d.rq.RunListActive(ctx, dbsqlc.RunListActiveParams{
			Statuses: *statuses, Name: p.Name, Since: microsPtr(p.Since), Until: microsPtr(p.Until), Cursor: p.Cursor, RowLimit: int64(p.Limit),
		})
	default:
		rows, err = d.rq.RunList(ctx, dbsqlc.RunListParams{
			Statuses: statuses, Name: p.Name, Since: microsPtr(p.Since), Until: microsPtr(p.Until), Cursor: p.Cursor, RowLimit: int64(p.Limit),
		})
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return runRows(rows), nil
}

// RunDelete deletes a terminal run with its claims, shards and logs in one
// transaction.
func (d *driver) RunDelete(ctx context.Context, runID string) (bool, error) {
	var deleted bool
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		n, err := q.RunDelete(ctx, runID)
		if deleted = n == 1; err != nil || !deleted {
			return err
		}
		for _, del := range []func(context.Context, string) (int64, error){
			q.IdempotencyRelease, q.ShardDeleteByRun, q.RunLogDeleteByRun, q.RunLogDeleteTruncationByRun,
		} {
			if _, err := del(ctx, runID); err != nil {
				return err
			}
		}
		return nil
	})
	return deleted, err
}

func (d *driver) RunRenewLeases(ctx context.Context, p *db.LeaseParams) ([]string, error) {
	arg := dbsqlc.RunRenewLeasesParams{LeaseExpiresAt: ptr(micros(p.LeaseExpiresAt)), Owner: &p.Owner}
	return writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) ([]string, error) { return q.RunRenewLeases(ctx, arg) })
}

func (d *driver) RunFailLapsed(ctx context.Context, p *db.RunFailParams) (int, error) {
	arg := dbsqlc.RunFailLapsedParams{Now: ptr(micros(p.Now)), Error: &p.Error}
	return count(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.RunFailLapsed(ctx, arg) }))
}

func (d *driver) RunFailUnfinished(ctx context.Context, p *db.RunFailParams) ([]string, error) {
	arg := dbsqlc.RunFailUnfinishedParams{Now: ptr(micros(p.Now)), Error: &p.Error}
	return writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) ([]string, error) { return q.RunFailUnfinished(ctx, arg) })
}

func (d *driver) RunCancelPending(ctx context.Context, p *db.RunCancelPendingParams) (bool, error) {
	arg := dbsqlc.RunCancelPendingParams{Now: ptr(micros(p.Now)), RunID: p.RunID}
	return one(writeValue(ctx, d, func(ctx context.Context, q *dbsqlc.Queries) (int64, error) { return q.RunCancelPending(ctx, arg) }))
}

// RunRequestCancel flags the run and, for a sharded run, cancels its shards
// that have not started, in one transaction.
func (d *driver) RunRequestCancel(ctx context.Context, p *db.RunRequestCancelParams) (bool, error) {
	var flagged bool
	now := ptr(micros(p.Now))
	err := d.write(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		status, err := q.RunRequestCancel(ctx, dbsqlc.RunRequestCancelParams{RunID: p.RunID, Now: now})
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		if flagged = true; db.RunStatus(status) != db.StatusSharded {
			return nil
		}
		_, err = q.ShardCancelPending(ctx, dbsqlc.ShardCancelPendingParams{RunID: p.RunID, Now: now, Error: &p.ShardError})
		return err
	})
	return flagged, err
}
