package db

import "context"

func (s *store) AuditInsert(ctx context.Context, e AuditEntry) error {
	e.Timestamp = micro(e.Timestamp)
	return fail(ctx, "audit insert", s.d.AuditInsert(ctx, &e))
}

func (s *store) AuditList(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultAuditLimit
	}
	entries, err := s.d.AuditList(ctx, &AuditListParams{
		Principal: f.Principal, Action: f.Action, Since: microPtr(f.Since), Until: microPtr(f.Until), Limit: limit,
	})
	return failed(ctx, "audit list", entries, err)
}
