package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

func (s *store) LocalOutputRecord(ctx context.Context, w LocalOutputWrite) (LocalOutput, error) {
	const op = "local output record"
	p, err := s.localOutput(w, s.now())
	if err != nil {
		return LocalOutput{}, invalid(op, err)
	}
	out, err := s.d.LocalOutputUpsert(ctx, &p)
	return failed(ctx, op, out, err)
}

// localOutput is the upsert of one ledger write, stamped now unless it
// carries its own time; LocalOutputRecord and RunFinish write it alike.
func (s *store) localOutput(w LocalOutputWrite, now time.Time) (LocalOutputUpsertParams, error) {
	if w.Path == "" || w.RunID == "" {
		return LocalOutputUpsertParams{}, errors.New("a local output needs a path and a run")
	}
	if w.At.IsZero() {
		w.At = now
	}
	w.At = micro(w.At)
	return LocalOutputUpsertParams{ID: uuid.Must(uuid.NewV7()).String(), LocalOutputWrite: w}, nil
}

func (s *store) LocalOutputGet(ctx context.Context, id string) (*LocalOutput, error) {
	out, err := s.d.LocalOutputGet(ctx, id)
	if err != nil {
		return nil, fail(ctx, "local output get", err)
	}
	return &out, nil
}

func (s *store) LocalOutputList(ctx context.Context, f LocalOutputFilter) (LocalOutputPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	// One more than the page tells whether another page follows.
	rows, err := s.d.LocalOutputList(ctx, &LocalOutputListParams{RunID: f.RunID, PathPrefix: f.PathPrefix, Cursor: f.Cursor, Limit: limit + 1})
	if err != nil {
		return LocalOutputPage{}, fail(ctx, "local output list", err)
	}
	page := LocalOutputPage{Outputs: rows}
	if len(rows) > limit {
		page.Outputs = rows[:limit]
		next := rows[limit-1].ID
		page.NextCursor = &next
	}
	if page.Outputs == nil {
		page.Outputs = []LocalOutput{}
	}
	return page, nil
}

func (s *store) LocalOutputMarkDeleted(ctx context.Context, id string) (*LocalOutput, bool, error) {
	out, err := s.d.LocalOutputMarkDeleted(ctx, id, s.now())
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fail(ctx, "local output mark deleted", err)
	}
	return &out, true, nil
}
