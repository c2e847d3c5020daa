package sqlite

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

func (d *driver) AuditInsert(ctx context.Context, e *db.AuditEntry) error {
	arg := auditParams(e)
	return d.writeOne(ctx, func(ctx context.Context, q *dbsqlc.Queries) error { return q.AuditInsert(ctx, arg) })
}

// auditParams is e as AuditInsert's parameters.
func auditParams(e *db.AuditEntry) dbsqlc.AuditInsertParams {
	return dbsqlc.AuditInsertParams{
		ID: e.ID, Ts: micros(e.Timestamp), Principal: e.Principal, Role: e.Role, Action: e.Action,
		RunID: e.RunID, ConfigFingerprint: e.ConfigFingerprint, SourceIp: e.SourceIP, Result: e.Result,
	}
}

func (d *driver) AuditList(ctx context.Context, p *db.AuditListParams) ([]db.AuditEntry, error) {
	rows, err := d.rq.AuditList(ctx, dbsqlc.AuditListParams{
		Principal: p.Principal, Action: p.Action, Since: microsPtr(p.Since), Until: microsPtr(p.Until), RowLimit: int64(p.Limit),
	})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = db.AuditEntry{
			ID: r.ID, Timestamp: fromMicros(r.Ts), Principal: r.Principal, Role: r.Role, Action: r.Action,
			RunID: r.RunID, ConfigFingerprint: r.ConfigFingerprint, SourceIP: r.SourceIp, Result: r.Result,
		}
	}
	return out, nil
}
