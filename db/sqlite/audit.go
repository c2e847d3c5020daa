package sqlite

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// AuditInsert appends one audit entry.
func (s *Store) AuditInsert(ctx context.Context, e db.AuditEntry) error {
	params := auditParams(e)
	return s.writeOne(ctx, "audit insert", func(ctx context.Context, q *dbsqlc.Queries) error {
		return q.AuditInsert(ctx, params)
	})
}

// auditParams is e as AuditInsert's parameters.
func auditParams(e db.AuditEntry) dbsqlc.AuditInsertParams {
	return dbsqlc.AuditInsertParams{
		ID:                e.ID,
		Ts:                micros(e.Timestamp),
		Principal:         e.Principal,
		Role:              e.Role,
		Action:            e.Action,
		RunID:             e.RunID,
		ConfigFingerprint: e.ConfigFingerprint,
		SourceIp:          e.SourceIP,
		Result:            e.Result,
	}
}

// AuditList returns matching audit entries, newest first.
func (s *Store) AuditList(ctx context.Context, f db.AuditFilter) ([]db.AuditEntry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = db.DefaultAuditLimit
	}
	rows, err := s.rq.AuditList(ctx, dbsqlc.AuditListParams{
		Principal: f.Principal,
		Action:    f.Action,
		Since:     microsPtr(f.Since),
		Until:     microsPtr(f.Until),
		RowLimit:  int64(limit),
	})
	if err != nil {
		return nil, wrap(ctx, "audit list", err)
	}
	out := make([]db.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = db.AuditEntry{
			ID:                r.ID,
			Timestamp:         fromMicros(r.Ts),
			Principal:         r.Principal,
			Role:              r.Role,
			Action:            r.Action,
			RunID:             r.RunID,
			ConfigFingerprint: r.ConfigFingerprint,
			SourceIP:          r.SourceIp,
			Result:            r.Result,
		}
	}
	return out, nil
}
