package postgres

import (
	"context"
	"errors"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
)

// errRecorded rolls back a record whose invocation was recorded before.
var errRecorded = errors.New("the invocation was recorded before")

// CatalogRecord upserts the datasets first: their row locks, taken in id
// order, serialize the recorders of a dataset for the rest of the
// transaction, so each appends a schema version after the other's.
func (d *driver) CatalogRecord(ctx context.Context, p *db.CatalogRecordParams) (bool, error) {
	err := d.inTx(ctx, func(q *dbsqlc.Queries) error {
		for _, ds := range p.Datasets {
			if err := q.CatalogDatasetUpsert(ctx, dbsqlc.CatalogDatasetUpsertParams{
				ID: ds.ID, Uri: ds.URI, UriFolded: ds.URIFolded, Kind: ds.Kind, AsSource: ds.AsSource, AsSink: ds.AsSink,
				RecordedAt: p.RecordedAt, RunID: p.RunID, Pipeline: p.Pipeline, Records: ds.Records,
			}); err != nil {
				return err
			}
		}
		for i, st := range p.Stats {
			n, err := q.CatalogStatInsert(ctx, dbsqlc.CatalogStatInsertParams{
				DatasetID: st.DatasetID, RunID: p.RunID, RowID: p.RowID, Role: st.Role, RecordedAt: p.RecordedAt,
				Status: string(p.Status), Records: st.Records, Bytes: st.Bytes, DurationMs: p.DurationMS,
			})
			if err != nil {
				return err
			}
			if i == 0 && n == 0 {
				return errRecorded
			}
		}
		for _, ds := range p.Datasets {
			if ds.SchemaHash != "" {
				if _, err := q.CatalogSchemaVersionAppend(ctx, dbsqlc.CatalogSchemaVersionAppendParams{
					DatasetID: ds.ID, RecordedAt: p.RecordedAt, RunID: p.RunID, Schema: ds.Schema, SchemaHash: ds.SchemaHash,
				}); err != nil {
					return err
				}
			}
			if _, err := q.CatalogStatPrune(ctx, dbsqlc.CatalogStatPruneParams{DatasetID: ds.ID, Keep: int32(p.StatsKeep)}); err != nil {
				return err
			}
		}
		for _, e := range p.Edges {
			if err := q.CatalogEdgeUpsert(ctx, dbsqlc.CatalogEdgeUpsertParams{
				SrcID: e.SrcID, DstID: e.DstID, Pipeline: p.Pipeline, RowID: p.RowID, RecordedAt: p.RecordedAt, RunID: p.RunID, Records: e.Records,
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errRecorded) {
		return false, nil
	}
	return err == nil, err
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

func (d *driver) CatalogStats(ctx context.Context, id string, limit int) ([]db.CatalogStat, error) {
	rows, err := d.q.CatalogStatList(ctx, dbsqlc.CatalogStatListParams{DatasetID: id, PageLimit: int32(limit)})
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]db.CatalogStat, len(rows))
	for i, r := range rows {
		out[i] = db.CatalogStat{
			RecordedAt: r.RecordedAt.UTC(), RunID: r.RunID, RowID: r.RowID, Role: r.Role, Status: db.RunStatus(r.Status),
			Records: r.Records, Bytes: r.Bytes, DurationMS: r.DurationMs,
		}
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

func (d *driver) CatalogEdgesTo(ctx context.Context, id string, limit int) ([]db.CatalogEdge, error) {
	rows, err := d.q.CatalogEdgeListTo(ctx, dbsqlc.CatalogEdgeListToParams{DatasetID: id, PageLimit: int32(limit)})
	return edges(rows, err, func(r dbsqlc.CatalogEdgeListToRow) (dbsqlc.FaucetCatalogEdge, string, string) {
		return r.FaucetCatalogEdge, r.SrcUri, r.DstUri
	})
}

func (d *driver) CatalogEdgesFrom(ctx context.Context, id string, limit int) ([]db.CatalogEdge, error) {
	rows, err := d.q.CatalogEdgeListFrom(ctx, dbsqlc.CatalogEdgeListFromParams{DatasetID: id, PageLimit: int32(limit)})
	return edges(rows, err, func(r dbsqlc.CatalogEdgeListFromRow) (dbsqlc.FaucetCatalogEdge, string, string) {
		return r.FaucetCatalogEdge, r.SrcUri, r.DstUri
	})
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

func (d *driver) ConfigSnapshotPut(ctx context.Context, s *db.ConfigSnapshot) error {
	return interpretError(d.q.ConfigSnapshotUpsert(ctx, dbsqlc.ConfigSnapshotUpsertParams{
		Pipeline: s.Pipeline, RecordedAt: s.RecordedAt, RunID: s.RunID, Body: s.Body,
	}))
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
