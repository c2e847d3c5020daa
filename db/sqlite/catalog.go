package sqlite

import (
	"context"
	"encoding/json"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// CatalogRecord writes the batch as one write: SQLite's write lock
// serializes it with every other recorder's.
func (d *driver) CatalogRecord(ctx context.Context, p *db.CatalogRecordParams) error {
	return d.writePatient(ctx, func(ctx context.Context, q *dbsqlc.Queries) error {
		claimed, err := q.CatalogBatchClaim(ctx, dbsqlc.CatalogBatchClaimParams{BatchID: p.BatchID, RecordedAt: micros(p.RecordedAt)})
		if err != nil || claimed == 0 {
			return err
		}
		if !p.ForgetBefore.IsZero() {
			if err := q.CatalogBatchTrim(ctx, micros(p.ForgetBefore)); err != nil {
				return err
			}
		}
		recorded := make(map[string]int64, len(p.Datasets))
		for _, r := range p.Datasets {
			n, err := q.CatalogDatasetUpsert(ctx, dbsqlc.CatalogDatasetUpsertParams{
				ID: r.ID, Uri: r.URI, UriFolded: r.URIFolded, Kind: r.Kind, AsSource: flag(r.AsSource), AsSink: flag(r.AsSink),
				FirstSeen: micros(r.FirstSeen), LastSeen: micros(r.LastSeen), LastRunID: r.LastRunID, Pipeline: r.Pipeline,
				LastRecords: r.LastRecords, TotalRecords: r.TotalRecords, Runs: r.Runs, StatsRecorded: r.StatsRecorded,
			})
			if err != nil {
				return err
			}
			recorded[r.ID] = n
		}
		blocks, err := db.CatalogStatBlocks(p.Stats, recorded, p.StatsKeep)
		if err != nil {
			return &db.Error{Transience: db.Permanent, Err: err}
		}
		for _, b := range blocks {
			if err := q.CatalogStatBlockPut(ctx, dbsqlc.CatalogStatBlockPutParams{DatasetID: b.DatasetID, LastSeq: b.LastSeq, Points: b.Points, Body: string(b.Body)}); err != nil {
				return err
			}
			if !b.Trims() {
				continue
			}
			if err := q.CatalogStatBlockTrim(ctx, dbsqlc.CatalogStatBlockTrimParams{DatasetID: b.DatasetID, PrevFloor: b.PrevFloor, Floor: b.Floor}); err != nil {
				return err
			}
		}
		for _, v := range p.Versions {
			if _, err := q.CatalogSchemaVersionAppend(ctx, dbsqlc.CatalogSchemaVersionAppendParams{
				DatasetID: v.DatasetID, RecordedAt: micros(v.RecordedAt), RunID: v.RunID, Schema: string(v.Schema), SchemaHash: v.SchemaHash,
			}); err != nil {
				return err
			}
		}
		for _, r := range p.Edges {
			if err := q.CatalogEdgeUpsert(ctx, dbsqlc.CatalogEdgeUpsertParams{
				SrcID: r.SrcID, DstID: r.DstID, Pipeline: r.Pipeline, RowID: r.RowID, FirstSeen: micros(r.FirstSeen), LastSeen: micros(r.LastSeen),
				LastRunID: r.LastRunID, Runs: r.Runs, LastRecords: r.LastRecords,
			}); err != nil {
				return err
			}
		}
		for _, s := range p.Snapshots {
			if err := q.ConfigSnapshotUpsert(ctx, dbsqlc.ConfigSnapshotUpsertParams{Pipeline: s.Pipeline, RecordedAt: micros(s.RecordedAt), RunID: s.RunID, Body: string(s.Body)}); err != nil {
				return err
			}
		}
		return nil
	})
}

func datasetRow(r dbsqlc.CatalogDatasetListRow) db.CatalogDatasetRow {
	return db.CatalogDatasetRow{
		ID: r.ID, URI: r.Uri, Kind: r.Kind, AsSource: r.AsSource == 1, AsSink: r.AsSink == 1,
		FirstSeen: fromMicros(r.FirstSeen), LastSeen: fromMicros(r.LastSeen), LastRunID: r.LastRunID, Pipeline: r.Pipeline,
		LastRecords: r.LastRecords, TotalRecords: r.TotalRecords, Runs: r.Runs,
		SchemaVersion: int(r.SchemaVersions), Schema: bytesPtr(r.Schema), SchemaHash: r.SchemaHash,
	}
}

func (d *driver) CatalogDatasetList(ctx context.Context, p *db.CatalogDatasetListParams) ([]db.CatalogDatasetRow, error) {
	arg := dbsqlc.CatalogDatasetListParams{Kind: p.Kind, Folded: p.Folded, RowLimit: int64(p.Limit)}
	if p.Cursor != "" {
		arg.Cursor = &p.Cursor
	}
	rows, err := d.rq.CatalogDatasetList(ctx, arg)
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogDatasetRow, len(rows))
	for i, r := range rows {
		out[i] = datasetRow(r)
	}
	return out, nil
}

func (d *driver) CatalogDatasetGet(ctx context.Context, id string) (db.CatalogDatasetRow, error) {
	r, err := d.rq.CatalogDatasetGet(ctx, id)
	if err != nil {
		return db.CatalogDatasetRow{}, interpretError(err)
	}
	return datasetRow(dbsqlc.CatalogDatasetListRow(r)), nil
}

func (d *driver) CatalogDatasetExists(ctx context.Context, id string) (bool, error) {
	ok, err := d.rq.CatalogDatasetExists(ctx, id)
	return ok, interpretError(err)
}

func (d *driver) CatalogSchemaVersions(ctx context.Context, id string, limit int) ([]db.CatalogSchemaVersionRow, error) {
	rows, err := d.rq.CatalogSchemaVersionList(ctx, dbsqlc.CatalogSchemaVersionListParams{DatasetID: id, RowLimit: int64(limit)})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogSchemaVersionRow, len(rows))
	for i, r := range rows {
		out[i] = db.CatalogSchemaVersionRow{Version: int(r.Version), RecordedAt: fromMicros(r.RecordedAt), RunID: r.RunID, Schema: []byte(r.Schema), SchemaHash: r.SchemaHash}
	}
	return out, nil
}

func (d *driver) CatalogStatBlocks(ctx context.Context, id string, newest int) ([]db.CatalogStatBlockRow, error) {
	rows, err := d.rq.CatalogStatBlockList(ctx, dbsqlc.CatalogStatBlockListParams{DatasetID: id, Newest: int64(newest)})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogStatBlockRow, len(rows))
	for i, r := range rows {
		out[i] = db.CatalogStatBlockRow{LastSeq: r.LastSeq, Points: r.Points, Body: []byte(r.Body)}
	}
	return out, nil
}

func edge(e dbsqlc.FaucetCatalogEdge, src, dst string) db.CatalogEdge {
	return db.CatalogEdge{
		SrcID: e.SrcID, DstID: e.DstID, SrcURI: src, DstURI: dst, Pipeline: e.Pipeline, RowID: e.RowID,
		FirstSeen: fromMicros(e.FirstSeen), LastSeen: fromMicros(e.LastSeen), LastRunID: e.LastRunID, Runs: e.Runs, LastRecords: e.LastRecords,
	}
}

// edges converts the rows of any of the edge queries, which sqlc gives a
// type each.
func edges[R any](rows []R, err error, of func(R) (dbsqlc.FaucetCatalogEdge, string, string)) ([]db.CatalogEdge, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogEdge, len(rows))
	for i, r := range rows {
		out[i] = edge(of(r))
	}
	return out, nil
}

func (d *driver) CatalogEdges(ctx context.Context, limit int) ([]db.CatalogEdge, error) {
	rows, err := d.rq.CatalogEdgeList(ctx, int64(limit))
	return edges(rows, err, func(r dbsqlc.CatalogEdgeListRow) (dbsqlc.FaucetCatalogEdge, string, string) {
		return r.FaucetCatalogEdge, r.SrcUri, r.DstUri
	})
}

func (d *driver) CatalogEdgesTouching(ctx context.Context, ids []string, limit int) ([]db.CatalogEdge, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, &db.Error{Transience: db.Permanent, Err: err}
	}
	rows, err := d.rq.CatalogEdgeListTouching(ctx, dbsqlc.CatalogEdgeListTouchingParams{Ids: string(list), RowLimit: int64(limit)})
	return edges(rows, err, func(r dbsqlc.CatalogEdgeListTouchingRow) (dbsqlc.FaucetCatalogEdge, string, string) {
		return r.FaucetCatalogEdge, r.SrcUri, r.DstUri
	})
}

func (d *driver) ConfigSnapshotGet(ctx context.Context, pipeline string) (db.ConfigSnapshots, error) {
	r, err := d.rq.ConfigSnapshotGet(ctx, pipeline)
	if err != nil {
		return db.ConfigSnapshots{}, interpretError(err)
	}
	out := db.ConfigSnapshots{Latest: db.ConfigSnapshot{Pipeline: r.Pipeline, RecordedAt: fromMicros(r.RecordedAt), RunID: r.RunID, Body: []byte(r.Body)}}
	if r.PreviousRunID != nil && r.PreviousRecordedAt != nil && r.PreviousBody != nil {
		out.Previous = &db.ConfigSnapshot{Pipeline: r.Pipeline, RecordedAt: fromMicros(*r.PreviousRecordedAt), RunID: *r.PreviousRunID, Body: []byte(*r.PreviousBody)}
	}
	return out, nil
}

func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
