package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/auth"
)

// registerCatalog adds the data movement catalog's read routes: the
// reference's three, and the config snapshots faucet plan --diff reads.
func registerCatalog(g groups, d *Deps) {
	huma.Register(g.v1, huma.Operation{
		OperationID: "listCatalogDatasets", Method: http.MethodGet, Path: "/catalog/datasets",
		Summary: "List catalogued datasets (Data Movement Catalog)", Tags: []string{"catalog"},
		Description: "Every dataset the server's runs have read or written, accumulated run over run in the history " +
			"(retention never purges it), newest activity first (last_seen, then id, descending). Pass next_cursor as " +
			"cursor for the next page; a cursor that names no dataset is 400.",
		Errors:   []int{400, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.listCatalogDatasets)

	huma.Register(g.v1, huma.Operation{
		OperationID: "getCatalogDataset", Method: http.MethodGet, Path: "/catalog/datasets/{id}",
		Summary: "Get one dataset's catalog detail", Tags: []string{"catalog"},
		Description: "The dataset, its schema timeline (each version with its diff against the one before: added, " +
			"widened, changed and removed columns), its newest volume points, and its upstream and downstream edges.",
		Errors:   []int{400, 404, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getCatalogDataset)

	huma.Register(g.v1, huma.Operation{
		OperationID: "getCatalogLineage", Method: http.MethodGet, Path: "/catalog/lineage",
		Summary: "Get the dataset lineage graph", Tags: []string{"catalog"},
		Description: "The source → sink edges accumulated across runs: the whole graph, or with root the edges within " +
			"depth hops of that dataset in either direction (a root that names no dataset has none). At most 5000 " +
			"edges, the newest; truncated says when there are more.",
		Errors:   []int{400, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getCatalogLineage)

	huma.Register(g.v1, huma.Operation{
		OperationID: "getConfigSnapshot", Method: http.MethodGet, Path: "/catalog/snapshots/{pipeline}",
		Summary: "Get a pipeline's last config snapshots", Tags: []string{"catalog"},
		Description: "The resolved config the pipeline's last run executed, and the one before it, with every secret " +
			"replaced by a salted fingerprint. faucet plan --diff compares a config file with it.",
		Errors:   []int{400, 404, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getConfigSnapshot)
}

type listCatalogInput struct {
	Kind   string `query:"kind" maxLength:"128" doc:"Only datasets of this connector kind (csv, postgres, …), exactly."`
	Q      string `query:"q" maxLength:"256" doc:"Only datasets whose URI contains this, ignoring case."`
	Limit  int    `query:"limit" default:"100" minimum:"1" maximum:"1000" doc:"Page size."`
	Cursor string `query:"cursor" maxLength:"64" doc:"next_cursor of the previous page (the id of its last dataset)."`
}

type listCatalogOutput struct {
	Body CatalogDatasetPage
}

func (d *Deps) listCatalogDatasets(ctx context.Context, in *listCatalogInput) (*listCatalogOutput, error) {
	page, err := d.Store.CatalogDatasetList(ctx, db.CatalogFilter{Kind: optString(in.Kind), Q: optString(in.Q), Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return nil, d.catalogError(err)
	}
	out := &listCatalogOutput{Body: CatalogDatasetPage{Datasets: make([]CatalogDataset, len(page.Datasets)), NextCursor: page.NextCursor}}
	for i, ds := range page.Datasets {
		out.Body.Datasets[i] = toCatalogDataset(ds)
	}
	return out, nil
}

type datasetIDInput struct {
	ID string `path:"id" maxLength:"64" doc:"Dataset id (16-hex sha256 prefix of the canonical URI)."`
}

type getCatalogDatasetOutput struct {
	Body CatalogDatasetDetail
}

func (d *Deps) getCatalogDataset(ctx context.Context, in *datasetIDInput) (*getCatalogDatasetOutput, error) {
	detail, err := d.Store.CatalogDatasetGet(ctx, in.ID)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return nil, errNotFound("no dataset " + in.ID + " in the catalog")
		}
		return nil, d.catalogError(err)
	}
	return &getCatalogDatasetOutput{Body: toCatalogDetail(detail)}, nil
}

type lineageInput struct {
	Root  string `query:"root" maxLength:"64" doc:"Dataset id to root the graph at; omitted: the whole graph."`
	Depth int    `query:"depth" default:"5" minimum:"1" maximum:"32" doc:"Hops around root (ignored without one)."`
}

type lineageOutput struct {
	Body CatalogLineage
}

func (d *Deps) getCatalogLineage(ctx context.Context, in *lineageInput) (*lineageOutput, error) {
	g, err := d.Store.CatalogLineage(ctx, in.Root, in.Depth)
	if err != nil {
		return nil, d.catalogError(err)
	}
	return &lineageOutput{Body: CatalogLineage{Edges: toCatalogEdges(g.Edges), Truncated: g.Truncated}}, nil
}

type snapshotInput struct {
	Pipeline string `path:"pipeline" minLength:"1" maxLength:"256" doc:"Pipeline name: the runs' name, which defaults to their config's."`
}

type snapshotOutput struct {
	Body ConfigSnapshotRecord
}

func (d *Deps) getConfigSnapshot(ctx context.Context, in *snapshotInput) (*snapshotOutput, error) {
	snaps, err := d.Store.ConfigSnapshotGet(ctx, in.Pipeline)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return nil, errNotFound("no config snapshot of pipeline " + in.Pipeline + ": none of its runs has finished yet")
		}
		return nil, d.catalogError(err)
	}
	latest, err := snapshotBody(snaps.Latest.Body)
	if err != nil {
		return nil, d.catalogError(err)
	}
	out := &snapshotOutput{Body: ConfigSnapshotRecord{Pipeline: snaps.Latest.Pipeline, RecordedAt: snaps.Latest.RecordedAt, RunID: snaps.Latest.RunID, Snapshot: latest}}
	if p := snaps.Previous; p != nil {
		prev, err := snapshotBody(p.Body)
		if err != nil {
			return nil, d.catalogError(err)
		}
		out.Body.Previous = &ConfigSnapshotPrevious{RecordedAt: p.RecordedAt, RunID: p.RunID, Snapshot: prev}
	}
	return out, nil
}

// snapshotBody decodes a stored snapshot, numbers kept as written.
func snapshotBody(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	return m, dec.Decode(&m)
}

// catalogError maps a catalog read's error to its problem.
func (d *Deps) catalogError(err error) error {
	if errors.Is(err, db.ErrUnknownCursor) {
		return errBadConfig("query parameter cursor names no dataset: it is not a next_cursor; list again from the first page", nil)
	}
	return d.serviceError(err)
}
