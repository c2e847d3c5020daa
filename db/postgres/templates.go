package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// TemplateWrite writes in one read-committed transaction: the head row
// lock every write takes first orders the writers of a template, and each
// statement after it sees what the previous writer committed.
func (d *driver) TemplateWrite(ctx context.Context, fn func(ctx context.Context, w db.TemplateWriter) error) error {
	return d.inTx(ctx, func(q *dbsqlc.Queries) error { return fn(ctx, templateTx{q}) })
}

// The reads run on the pool, outside any transaction.

func (d *driver) TemplateVersionGet(ctx context.Context, id string, version int) (db.TemplateVersion, error) {
	return templateTx{d.q}.TemplateVersionGet(ctx, id, version)
}

func (d *driver) TemplateFacts(ctx context.Context, id string) (db.TemplateFacts, error) {
	return templateTx{d.q}.TemplateFacts(ctx, id)
}

func (d *driver) TemplateFactsAll(ctx context.Context) (map[string]db.TemplateFacts, error) {
	return templateTx{d.q}.TemplateFactsAll(ctx)
}

func (d *driver) TemplateListNewest(ctx context.Context) ([]db.TemplateVersion, error) {
	return templateTx{d.q}.TemplateListNewest(ctx)
}

// templateTx runs the template statements on q: the pool's, or a
// transaction's.
type templateTx struct{ q *dbsqlc.Queries }

var _ db.TemplateWriter = templateTx{}

func (t templateTx) TemplateVersionGet(ctx context.Context, id string, version int) (db.TemplateVersion, error) {
	r, err := t.q.TemplateVersionGet(ctx, dbsqlc.TemplateVersionGetParams{TemplateID: id, Version: int32(version)})
	if err != nil {
		return db.TemplateVersion{}, interpretError(err)
	}
	return db.TemplateVersion{
		ID: r.TemplateID, Version: int(r.Version), Name: r.Name, Description: r.Description, Format: r.Format,
		Body: r.Body, Params: r.Params, CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy,
	}, nil
}

func (t templateTx) TemplateFacts(ctx context.Context, id string) (db.TemplateFacts, error) {
	r, err := t.q.TemplateFacts(ctx, id)
	if err != nil {
		return db.TemplateFacts{}, interpretError(err)
	}
	return decodeFacts(r.Versions, r.Launches, r.Tags, r.Deprecations)
}

func (t templateTx) TemplateFactsAll(ctx context.Context) (map[string]db.TemplateFacts, error) {
	rows, err := t.q.TemplateFactsAll(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make(map[string]db.TemplateFacts, len(rows))
	for _, r := range rows {
		if out[r.TemplateID], err = decodeFacts(r.Versions, r.Launches, r.Tags, r.Deprecations); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeFacts reads the facts' JSON, whose times are timestamptz as text.
func decodeFacts(versions, launches, tags, deprecations []byte) (db.TemplateFacts, error) {
	f, err := db.DecodeTemplateFacts(versions, launches, tags, deprecations, func(raw json.RawMessage) (time.Time, error) {
		var t time.Time
		err := json.Unmarshal(raw, &t)
		return t, err
	})
	if err != nil {
		return f, &db.Error{Transience: db.Permanent, Err: err}
	}
	return f, nil
}

func (t templateTx) TemplateListNewest(ctx context.Context) ([]db.TemplateVersion, error) {
	rows, err := t.q.TemplateListNewest(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.TemplateVersion, len(rows))
	for i, r := range rows {
		out[i] = db.TemplateVersion{
			ID: r.TemplateID, Version: int(r.Version), Name: r.Name, Description: r.Description, Format: r.Format,
			Params: r.Params, CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy,
		}
	}
	return out, nil
}

func (t templateTx) TemplateLock(ctx context.Context, id string) error {
	_, err := t.q.TemplateLock(ctx, id)
	return interpretError(err)
}

func (t templateTx) TemplateNextVersion(ctx context.Context, id string, now time.Time) (int, error) {
	v, err := t.q.TemplateNextVersion(ctx, dbsqlc.TemplateNextVersionParams{TemplateID: id, Now: now})
	return int(v), interpretError(err)
}

func (t templateTx) TemplateVersionInsert(ctx context.Context, v *db.TemplateVersion) error {
	return interpretError(t.q.TemplateVersionInsert(ctx, dbsqlc.TemplateVersionInsertParams{
		TemplateID: v.ID, Version: int32(v.Version), Name: v.Name, Description: v.Description, Format: v.Format,
		Body: v.Body, Params: v.Params, CreatedAt: v.CreatedAt, CreatedBy: v.CreatedBy,
	}))
}

func (t templateTx) TemplateVersionDelete(ctx context.Context, id string, version int) error {
	return interpretError(t.q.TemplateVersionDelete(ctx, dbsqlc.TemplateVersionDeleteParams{TemplateID: id, Version: int32(version)}))
}

func (t templateTx) TemplateDelete(ctx context.Context, id string) error {
	return interpretError(t.q.TemplateDelete(ctx, id))
}

func (t templateTx) TemplateTagSet(ctx context.Context, p *db.TemplateTagParams) error {
	return interpretError(t.q.TemplateTagSet(ctx, dbsqlc.TemplateTagSetParams{
		TemplateID: p.ID, Tag: p.Tag, Version: int32(p.Version), UpdatedAt: p.Now, UpdatedBy: p.By,
	}))
}

func (t templateTx) TemplateLaunchAppend(ctx context.Context, p *db.TemplateLaunchParams) (int, error) {
	seq, err := t.q.TemplateLaunchAppend(ctx, dbsqlc.TemplateLaunchAppendParams{
		TemplateID: p.ID, Version: int32(p.Version), LaunchedAt: p.Now, LaunchedBy: p.By,
	})
	return int(seq), interpretError(err)
}

func (t templateTx) TemplateLaunchTrim(ctx context.Context, id string, seq int) error {
	return interpretError(t.q.TemplateLaunchTrim(ctx, dbsqlc.TemplateLaunchTrimParams{TemplateID: id, Seq: int32(seq)}))
}

func (t templateTx) TemplateDeprecationSet(ctx context.Context, p *db.TemplateDeprecationParams) error {
	if err := t.TemplateDeprecationClear(ctx, p.ID, p.Version); err != nil {
		return err
	}
	return interpretError(t.q.TemplateDeprecationInsert(ctx, dbsqlc.TemplateDeprecationInsertParams{
		TemplateID: p.ID, Version: int32Ptr(p.Version), DeprecatedAt: p.Deprecation.DeprecatedAt,
		DeprecatedBy: p.Deprecation.DeprecatedBy, Reason: p.Deprecation.Reason,
	}))
}

func (t templateTx) TemplateDeprecationClear(ctx context.Context, id string, version *int) error {
	return interpretError(t.q.TemplateDeprecationClear(ctx, dbsqlc.TemplateDeprecationClearParams{TemplateID: id, Version: int32Ptr(version)}))
}
