package postgres

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

func (d *driver) RunInsert(ctx context.Context, p *db.RunInsertParams) error {
	r := &p.Run
	arg := dbsqlc.RunInsertParams{
		RunID: r.RunID, Name: r.Name, Labels: r.Labels, Status: string(r.Status),
		SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, IdempotencyKey: r.IdempotencyKey,
		Owner: p.Owner, LeaseExpiresAt: p.LeaseExpiresAt, Attempt: int32(r.Attempt), RecordsWritten: r.RecordsWritten,
		Error: r.Error, Submission: r.Submission, Invocations: r.Invocations,
		TemplateID: r.TemplateID, TemplateVersion: int32Ptr(r.TemplateVersion),
	}
	if a := p.Audit; a != nil {
		arg.AuditID, arg.AuditTs, arg.AuditPrincipal, arg.AuditRole, arg.AuditAction = &a.ID, a.Timestamp, a.Principal, a.Role, a.Action
		arg.AuditConfigFingerprint, arg.AuditSourceIp, arg.AuditResult = a.ConfigFingerprint, a.SourceIP, a.Result
	}
	if p.Fire == nil {
		return interpretError(d.q.RunInsert(ctx, arg))
	}
	f := p.Fire
	fire := dbsqlc.TriggerFireInsertParams{
		TriggerName: f.Trigger, FireKey: f.Key, Kind: f.Kind, Subject: f.Subject, EventAt: f.EventAt,
		RunID: f.RunID, FiredAt: f.FiredAt,
	}
	// The fire first: a concurrent insert of the same event waits on its
	// key until this transaction ends, then finds it taken.
	return d.inTx(ctx, func(q *dbsqlc.Queries) error {
		n, err := q.TriggerFireInsert(ctx, fire)
		if err != nil {
			return err
		}
		if n == 0 {
			return &db.Error{Transience: db.Permanent, Err: db.ErrAlreadyFired}
		}
		return q.RunInsert(ctx, arg)
	})
}

func (d *driver) RunStart(ctx context.Context, p *db.RunStartParams) (bool, error) {
	return one(d.q.RunStart(ctx, dbsqlc.RunStartParams{
		StartedAt: p.StartedAt, LeaseExpiresAt: p.LeaseExpiresAt, RunID: p.RunID, Owner: p.Owner,
	}))
}

// RunFinish writes the run, its lines and its ledger entries in one
// statement, then applies the log cap in a second: the cap is a retention
// bound, not part of the terminal write, which stays one round trip.
func (d *driver) RunFinish(ctx context.Context, p *db.RunFinishParams) (bool, error) {
	r := &p.Run
	seqs, tss, levels, texts := lineColumns(p.Lines)
	o := outputColumns(p.Outputs)
	var n int64
	var err error
	if p.Fenced {
		n, err = d.q.RunFinishOwned(ctx, dbsqlc.RunFinishOwnedParams{
			Status: string(r.Status), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, RecordsWritten: r.RecordsWritten,
			Error: r.Error, Invocations: r.Invocations, RunID: r.RunID, Owner: p.Owner,
			Seqs: seqs, Tss: tss, Levels: levels, Lines: texts,
			OutputIds: o.ids, OutputPaths: o.paths, OutputSizes: o.sizes, OutputRunIds: o.runIDs,
			OutputFirstAt: o.firstAt, OutputLastAt: o.lastAt, OutputExisted: o.existed, OutputFileIds: o.fileIDs,
		})
	} else {
		n, err = d.q.RunFinish(ctx, dbsqlc.RunFinishParams{
			RunID: r.RunID, Name: r.Name, Labels: r.Labels, Status: string(r.Status),
			SubmittedAt: r.SubmittedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, IdempotencyKey: r.IdempotencyKey,
			Owner: p.Owner, Attempt: int32(r.Attempt), RecordsWritten: r.RecordsWritten, Error: r.Error,
			Submission: r.Submission, Invocations: r.Invocations,
			TemplateID: r.TemplateID, TemplateVersion: int32Ptr(r.TemplateVersion),
			Seqs: seqs, Tss: tss, Levels: levels, Lines: texts,
			OutputIds: o.ids, OutputPaths: o.paths, OutputSizes: o.sizes, OutputRunIds: o.runIDs,
			OutputFirstAt: o.firstAt, OutputLastAt: o.lastAt, OutputExisted: o.existed, OutputFileIds: o.fileIDs,
		})
	}
	if err != nil {
		return false, interpretError(err)
	}
	if p.Trim != nil {
		if err := d.q.RunLogTrim(ctx, trimParams(r.RunID, p.Trim)); err != nil {
			return n == 1, interpretError(err)
		}
	}
	return n == 1, nil
}

func (d *driver) RunGet(ctx context.Context, runID string) (db.RunRow, error) {
	row, err := d.q.RunGet(ctx, runID)
	if err != nil {
		return db.RunRow{}, interpretError(err)
	}
	return runRow(row), nil
}

func (d *driver) RunStatus(ctx context.Context, runID string) (db.RunStatus, error) {
	st, err := d.q.RunStatus(ctx, runID)
	return db.RunStatus(st), interpretError(err)
}

func (d *driver) RunList(ctx context.Context, p *db.RunListParams) ([]db.RunRow, error) {
	statuses := make([]string, len(p.Statuses))
	for i, st := range p.Statuses {
		statuses[i] = string(st)
	}
	var rows []dbsqlc.FaucetRun
	var err error
	if p.Template != nil {
		rows, err = d.q.RunListTemplate(ctx, dbsqlc.RunListTemplateParams{
			Template: *p.Template, Statuses: statuses, Name: p.Name, Since: p.Since, Until: p.Until, Cursor: p.Cursor, PageLimit: int32(p.Limit),
		})
	} else {
		rows, err = d.q.RunList(ctx, dbsqlc.RunListParams{
			Statuses: statuses, Name: p.Name, Since: p.Since, Until: p.Until, Cursor: p.Cursor, PageLimit: int32(p.Limit),
		})
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return runRows(rows), nil
}

func (d *driver) RunDelete(ctx context.Context, runID string) (bool, error) {
	return one(d.q.RunDelete(ctx, runID))
}

func (d *driver) RunRenewLeases(ctx context.Context, p *db.LeaseParams) ([]string, error) {
	return result(d.q.RunRenewLeases(ctx, dbsqlc.RunRenewLeasesParams{LeaseExpiresAt: p.LeaseExpiresAt, Owner: p.Owner}))
}

func (d *driver) RunFailLapsed(ctx context.Context, p *db.RunFailParams) (int, error) {
	return count(d.q.RunFailLapsed(ctx, dbsqlc.RunFailLapsedParams{Now: p.Now, Error: p.Error}))
}

func (d *driver) RunFailUnfinished(ctx context.Context, p *db.RunFailParams) ([]string, error) {
	return result(d.q.RunFailUnfinished(ctx, dbsqlc.RunFailUnfinishedParams{Now: p.Now, Error: p.Error}))
}

func (d *driver) RunCancelPending(ctx context.Context, p *db.RunCancelPendingParams) (bool, error) {
	return one(d.q.RunCancelPending(ctx, dbsqlc.RunCancelPendingParams{Now: p.Now, RunID: p.RunID}))
}

func (d *driver) RunRequestCancel(ctx context.Context, p *db.RunRequestCancelParams) (bool, error) {
	return one(d.q.RunRequestCancel(ctx, dbsqlc.RunRequestCancelParams{Now: p.Now, RunID: p.RunID, ShardError: p.ShardError}))
}
