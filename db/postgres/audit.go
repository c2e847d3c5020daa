package postgres

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// AuditInsert appends one audit entry.
func (s *Store) AuditInsert(ctx context.Context, e db.AuditEntry) error {
	return fail("audit insert", s.q.AuditInsert(ctx, dbsqlc.AuditInsertParams{
		ID:                e.ID,
		Ts:                micro(e.Timestamp),
		Principal:         e.Principal,
		Role:              e.Role,
		Action:            e.Action,
		RunID:             e.RunID,
		ConfigFingerprint: e.ConfigFingerprint,
		SourceIp:          e.SourceIP,
		Result:            e.Result,
	}))
}

// AuditList returns matching entries, newest first.
func (s *Store) AuditList(ctx context.Context, f db.AuditFilter) ([]db.AuditEntry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = db.DefaultAuditLimit
	}
	rows, err := s.q.AuditList(ctx, dbsqlc.AuditListParams{
		Principal: f.Principal,
		Action:    f.Action,
		Since:     microPtr(f.Since),
		Until:     microPtr(f.Until),
		PageLimit: int32(limit),
	})
	if err != nil {
		return nil, fail("audit list", err)
	}
	out := make([]db.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = db.AuditEntry{
			ID:                r.ID,
			Timestamp:         r.Ts.UTC(),
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
