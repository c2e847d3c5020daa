package postgres

import (
	"context"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// CatalogRecord upserts the datasets first: their row locks, taken in id
// order, serialize the recorders of a dataset for the rest of the
// transaction, so each appends its schema versions after the other's.
func (d *driver) CatalogRecord(ctx context.Context, p *db.CatalogRecordParams) error {
	return d.inTx(ctx, func(q *dbsqlc.Queries) error {
		claimed, err := q.CatalogBatchClaim(ctx, dbsqlc.CatalogBatchClaimParams{BatchID: p.BatchID, RecordedAt: p.RecordedAt})
		if err != nil || claimed == 0 {
			return err
		}
		if !p.ForgetBefore.IsZero() {
			if err := q.CatalogBatchTrim(ctx, p.ForgetBefore); err != nil {
				return err
			}
		}
		recorded := make(map[string]int64, len(p.Datasets))
		if len(p.Datasets) > 0 {
			rows, err := q.CatalogDatasetUpsert(ctx, datasetColumns(p.Datasets))
			if err != nil {
				return err
			}
			for _, r := range rows {
				recorded[r.ID] = r.StatsRecorded
			}
		}
		blocks, err := db.CatalogStatBlocks(p.Stats, recorded, p.StatsKeep)
		if err != nil {
			return &db.Error{Transience: db.Permanent, Err: err}
		}
		if len(blocks) > 0 {
			put, trim := blockColumns(blocks)
			if err := q.CatalogStatBlockPut(ctx, put); err != nil {
				return err
			}
			if len(trim.DatasetIds) > 0 {
				if err := q.CatalogStatBlockTrim(ctx, trim); err != nil {
					return err
				}
			}
		}
		for _, v := range p.Versions {
			if _, err := q.CatalogSchemaVersionAppend(ctx, dbsqlc.CatalogSchemaVersionAppendParams{
				DatasetID: v.DatasetID, RecordedAt: v.RecordedAt, RunID: v.RunID, Schema: v.Schema, SchemaHash: v.SchemaHash,
			}); err != nil {
				return err
			}
		}
		if len(p.Edges) > 0 {
			if err := q.CatalogEdgeUpsert(ctx, edgeColumns(p.Edges)); err != nil {
				return err
			}
		}
		for _, s := range p.Snapshots {
			if err := q.ConfigSnapshotUpsert(ctx, dbsqlc.ConfigSnapshotUpsertParams{Pipeline: s.Pipeline, RecordedAt: s.RecordedAt, RunID: s.RunID, Body: s.Body}); err != nil {
				return err
			}
		}
		return nil
	})
}

// datasetColumns, blockColumns and edgeColumns turn a batch's rows into the
// arrays their statements unnest.
func datasetColumns(rows []db.CatalogDatasetWrite) dbsqlc.CatalogDatasetUpsertParams {
	var a dbsqlc.CatalogDatasetUpsertParams
	for _, r := range rows {
		a.Ids, a.Uris, a.Folded, a.Kinds = append(a.Ids, r.ID), append(a.Uris, r.URI), append(a.Folded, r.URIFolded), append(a.Kinds, r.Kind)
		a.AsSource, a.AsSink = append(a.AsSource, r.AsSource), append(a.AsSink, r.AsSink)
		a.FirstSeen, a.LastSeen = append(a.FirstSeen, r.FirstSeen), append(a.LastSeen, r.LastSeen)
		a.LastRunIds, a.Pipelines = append(a.LastRunIds, r.LastRunID), append(a.Pipelines, r.Pipeline)
		a.LastRecords, a.TotalRecords, a.Runs = append(a.LastRecords, r.LastRecords), append(a.TotalRecords, r.TotalRecords), append(a.Runs, r.Runs)
		a.StatsRecorded = append(a.StatsRecorded, r.StatsRecorded)
	}
	return a
}

func blockColumns(blocks []db.CatalogStatBlock) (dbsqlc.CatalogStatBlockPutParams, dbsqlc.CatalogStatBlockTrimParams) {
	var put dbsqlc.CatalogStatBlockPutParams
	var trim dbsqlc.CatalogStatBlockTrimParams
	for _, b := range blocks {
		put.DatasetIds, put.LastSeqs = append(put.DatasetIds, b.DatasetID), append(put.LastSeqs, b.LastSeq)
		put.Points, put.Bodies = append(put.Points, int32(b.Points)), append(put.Bodies, string(b.Body))
		if b.Trims() {
			trim.DatasetIds, trim.PrevFloors, trim.Floors = append(trim.DatasetIds, b.DatasetID), append(trim.PrevFloors, b.PrevFloor), append(trim.Floors, b.Floor)
		}
	}
	return put, trim
}

func edgeColumns(rows []db.CatalogEdgeWrite) dbsqlc.CatalogEdgeUpsertParams {
	var a dbsqlc.CatalogEdgeUpsertParams
	for _, r := range rows {
		a.SrcIds, a.DstIds, a.Pipelines, a.RowIds = append(a.SrcIds, r.SrcID), append(a.DstIds, r.DstID), append(a.Pipelines, r.Pipeline), append(a.RowIds, r.RowID)
		a.FirstSeen, a.LastSeen, a.LastRunIds = append(a.FirstSeen, r.FirstSeen), append(a.LastSeen, r.LastSeen), append(a.LastRunIds, r.LastRunID)
		a.Runs, a.LastRecords = append(a.Runs, r.Runs), append(a.LastRecords, r.LastRecords)
	}
	return a
}

func datasetRow(r dbsqlc.CatalogDatasetListRow) db.CatalogDatasetRow {
	return db.CatalogDatasetRow{
		ID: r.ID, URI: r.Uri, Kind: r.Kind, AsSource: r.AsSource, AsSink: r.AsSink, FirstSeen: r.FirstSeen, LastSeen: r.LastSeen,
		LastRunID: r.LastRunID, Pipeline: r.Pipeline, LastRecords: r.LastRecords, TotalRecords: r.TotalRecords, Runs: r.Runs,
		SchemaVersion: int(r.SchemaVersions), Schema: r.Schema, SchemaHash: r.SchemaHash,
	}
}

func (d *driver) CatalogDatasetList(ctx context.Context, p *db.CatalogDatasetListParams) ([]db.CatalogDatasetRow, error) {
	arg := dbsqlc.CatalogDatasetListParams{Kind: p.Kind, Folded: p.Folded, PageLimit: int32(p.Limit)}
	if p.Cursor != "" {
		arg.Cursor = &p.Cursor
	}
	rows, err := d.q.CatalogDatasetList(ctx, arg)
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
	r, err := d.q.CatalogDatasetGet(ctx, id)
	if err != nil {
		return db.CatalogDatasetRow{}, interpretError(err)
	}
	return datasetRow(dbsqlc.CatalogDatasetListRow(r)), nil
}

func (d *driver) CatalogDatasetExists(ctx context.Context, id string) (bool, error) {
	return result(d.q.CatalogDatasetExists(ctx, id))
}

func (d *driver) CatalogSchemaVersions(ctx context.Context, id string, limit int) ([]db.CatalogSchemaVersionRow, error) {
	rows, err := d.q.CatalogSchemaVersionList(ctx, dbsqlc.CatalogSchemaVersionListParams{DatasetID: id, PageLimit: int32(limit)})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogSchemaVersionRow, len(rows))
	for i, r := range rows {
		out[i] = db.CatalogSchemaVersionRow{Version: int(r.Version), RecordedAt: r.RecordedAt, RunID: r.RunID, Schema: r.Schema, SchemaHash: r.SchemaHash}
	}
	return out, nil
}

func (d *driver) CatalogStatBlocks(ctx context.Context, id string, newest int) ([]db.CatalogStatBlockRow, error) {
	rows, err := d.q.CatalogStatBlockList(ctx, dbsqlc.CatalogStatBlockListParams{DatasetID: id, Newest: int64(newest)})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogStatBlockRow, len(rows))
	for i, r := range rows {
		out[i] = db.CatalogStatBlockRow{LastSeq: r.LastSeq, Points: int64(r.Points), Body: []byte(r.Body)}
	}
	return out, nil
}

func edge(e dbsqlc.FaucetCatalogEdge, src, dst string) db.CatalogEdge {
	return db.CatalogEdge{
		SrcID: e.SrcID, DstID: e.DstID, SrcURI: src, DstURI: dst, Pipeline: e.Pipeline, RowID: e.RowID,
		FirstSeen: e.FirstSeen.UTC(), LastSeen: e.LastSeen.UTC(), LastRunID: e.LastRunID, Runs: e.Runs, LastRecords: e.LastRecords,
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
	rows, err := d.q.CatalogEdgeList(ctx, int32(limit))
	return edges(rows, err, func(r dbsqlc.CatalogEdgeListRow) (dbsqlc.FaucetCatalogEdge, string, string) {
		return r.FaucetCatalogEdge, r.SrcUri, r.DstUri
	})
}

func (d *driver) CatalogEdgesTouching(ctx context.Context, ids []string, limit int) ([]db.CatalogEdge, error) {
	rows, err := d.q.CatalogEdgeListTouching(ctx, dbsqlc.CatalogEdgeListTouchingParams{Ids: ids, PageLimit: int32(limit)})
	return edges(rows, err, func(r dbsqlc.CatalogEdgeListTouchingRow) (dbsqlc.FaucetCatalogEdge, string, string) {
		return r.FaucetCatalogEdge, r.SrcUri, r.DstUri
	})
}

func (d *driver) ConfigSnapshotGet(ctx context.Context, pipeline string) (db.ConfigSnapshots, error) {
	r, err := d.q.ConfigSnapshotGet(ctx, pipeline)
	if err != nil {
		return db.ConfigSnapshots{}, interpretError(err)
	}
	out := db.ConfigSnapshots{Latest: db.ConfigSnapshot{Pipeline: r.Pipeline, RecordedAt: r.RecordedAt.UTC(), RunID: r.RunID, Body: r.Body}}
	if r.PreviousRunID != nil && r.PreviousRecordedAt != nil {
		out.Previous = &db.ConfigSnapshot{Pipeline: r.Pipeline, RecordedAt: r.PreviousRecordedAt.UTC(), RunID: *r.PreviousRunID, Body: r.PreviousBody}
	}
	return out, nil
}
