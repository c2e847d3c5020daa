package postgres

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

func (d *driver) AuditInsert(ctx context.Context, e *db.AuditEntry) error {
	return interpretError(d.q.AuditInsert(ctx, dbsqlc.AuditInsertParams{
		ID: e.ID, Ts: e.Timestamp, Principal: e.Principal, Role: e.Role, Action: e.Action,
		RunID: e.RunID, ConfigFingerprint: e.ConfigFingerprint, SourceIp: e.SourceIP, Result: e.Result,
	}))
}

func (d *driver) AuditList(ctx context.Context, p *db.AuditListParams) ([]db.AuditEntry, error) {
	rows, err := d.q.AuditList(ctx, dbsqlc.AuditListParams{
		Principal: p.Principal, Action: p.Action, Since: p.Since, Until: p.Until, PageLimit: int32(p.Limit),
	})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = db.AuditEntry{
			ID: r.ID, Timestamp: r.Ts.UTC(), Principal: r.Principal, Role: r.Role, Action: r.Action,
			RunID: r.RunID, ConfigFingerprint: r.ConfigFingerprint, SourceIP: r.SourceIp, Result: r.Result,
		}
	}
	return out, nil
}
