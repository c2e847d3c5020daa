package db

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CatalogRecord turns an invocation into its rows: one dataset write per
// distinct dataset (a dataset both read and written is one, with both
// roles), a stats row per dataset and side, and an edge from every source
// dataset to every other sink dataset. An edge carries the sink's count
// when the invocation had one source dataset (what the sink wrote came from
// it) and the source side's count otherwise.
func (s *store) CatalogRecord(ctx context.Context, inv CatalogInvocation) error {
	const op = "catalog record"
	if inv.RunID == "" || inv.RowID == "" {
		return invalid(op, errors.New("a catalog record needs a run id and a row id"))
	}
	if len(inv.Sources)+len(inv.Sinks) == 0 {
		return nil
	}
	at := micro(inv.RecordedAt)
	if inv.RecordedAt.IsZero() {
		at = s.now()
	}
	p := &CatalogRecordParams{
		RunID: inv.RunID, Pipeline: inv.Pipeline, RowID: inv.RowID, Status: inv.Status,
		RecordedAt: at, DurationMS: inv.Duration.Milliseconds(), StatsKeep: StatsKept,
	}
	byID := map[string]*CatalogDatasetWrite{}
	add := func(o CatalogObservation, role string) (string, error) {
		if o.URI == "" {
			return "", invalid(op, fmt.Errorf("row %s: a %s dataset without a URI", inv.RowID, role))
		}
		id := DatasetID(o.URI)
		w := byID[id]
		if w == nil {
			w = &CatalogDatasetWrite{ID: id, URI: o.URI, URIFolded: strings.ToLower(o.URI), Kind: o.Kind}
			byID[id] = w
		}
		// A dataset on both sides takes the sink's view: what it holds now.
		if role == RoleSink || !w.AsSink {
			w.Records = o.Records
			if o.Schema != nil {
				w.Schema, w.SchemaHash = encodeSchema(o.Schema), schemaHash(o.Schema)
			}
		}
		w.AsSource = w.AsSource || role == RoleSource
		w.AsSink = w.AsSink || role == RoleSink
		p.Stats = append(p.Stats, CatalogStatWrite{DatasetID: id, Role: role, Records: o.Records, Bytes: o.Bytes})
		return id, nil
	}
	var srcIDs, dstIDs []string
	for _, o := range inv.Sources {
		id, err := add(o, RoleSource)
		if err != nil {
			return err
		}
		srcIDs = append(srcIDs, id)
	}
	for _, o := range inv.Sinks {
		id, err := add(o, RoleSink)
		if err != nil {
			return err
		}
		dstIDs = append(dstIDs, id)
	}
	for _, w := range byID {
		p.Datasets = append(p.Datasets, *w)
	}
	slices.SortFunc(p.Datasets, func(a, b CatalogDatasetWrite) int { return strings.Compare(a.ID, b.ID) })
	p.Stats = uniqueStats(p.Stats)
	for i, src := range srcIDs {
		for j, dst := range dstIDs {
			if src == dst {
				continue
			}
			records := inv.Sources[i].Records
			if len(srcIDs) == 1 {
				records = inv.Sinks[j].Records
			}
			p.Edges = append(p.Edges, CatalogEdgeWrite{SrcID: src, DstID: dst, Records: records})
		}
	}
	slices.SortFunc(p.Edges, func(a, b CatalogEdgeWrite) int {
		return cmp.Or(strings.Compare(a.SrcID, b.SrcID), strings.Compare(a.DstID, b.DstID))
	})
	p.Edges = slices.CompactFunc(p.Edges, func(a, b CatalogEdgeWrite) bool { return a.SrcID == b.SrcID && a.DstID == b.DstID })
	_, err := s.d.CatalogRecord(ctx, p)
	return fail(ctx, op, err)
}

// uniqueStats keeps the first stats row of each dataset and role: a side
// naming one dataset twice moved its records once.
func uniqueStats(rows []CatalogStatWrite) []CatalogStatWrite {
	seen := map[[2]string]bool{}
	out := rows[:0]
	for _, r := range rows {
		k := [2]string{r.DatasetID, r.Role}
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// CatalogDatasetList reads one row past the page, as RunList does, and
// looks the cursor up only when the page below it is empty.
func (s *store) CatalogDatasetList(ctx context.Context, f CatalogFilter) (CatalogPage, error) {
	const op = "catalog dataset list"
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultCatalogLimit
	}
	limit = min(limit, MaxCatalogLimit)
	var folded *string
	if f.Q != nil {
		q := strings.ToLower(*f.Q)
		folded = &q
	}
	rows, err := s.d.CatalogDatasetList(ctx, &CatalogDatasetListParams{Kind: f.Kind, Folded: folded, Cursor: f.Cursor, Limit: limit + 1})
	if err != nil {
		return CatalogPage{}, fail(ctx, op, err)
	}
	if len(rows) == 0 && f.Cursor != "" {
		ok, err := s.d.CatalogDatasetExists(ctx, f.Cursor)
		if err != nil {
			return CatalogPage{}, fail(ctx, op, err)
		}
		if !ok {
			return CatalogPage{}, invalid(op, fmt.Errorf("cursor %q names no dataset: %w", f.Cursor, ErrUnknownCursor))
		}
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	page := CatalogPage{Datasets: make([]CatalogDataset, 0, len(rows))}
	for _, r := range rows {
		d, err := decodeDataset(r)
		if err != nil {
			return CatalogPage{}, fail(ctx, op, err)
		}
		page.Datasets = append(page.Datasets, d)
	}
	if more {
		last := page.Datasets[len(page.Datasets)-1].ID
		page.NextCursor = &last
	}
	return page, nil
}

func decodeDataset(r CatalogDatasetRow) (CatalogDataset, error) {
	d := CatalogDataset{
		ID: r.ID, URI: r.URI, Kind: r.Kind, Roles: []string{},
		FirstSeen: r.FirstSeen.UTC(), LastSeen: r.LastSeen.UTC(), LastRunID: r.LastRunID, Pipeline: r.Pipeline,
		LastRecords: r.LastRecords, TotalRecords: r.TotalRecords, Runs: r.Runs,
		SchemaVersions: r.SchemaVersion, CurrentSchemaHash: r.SchemaHash,
	}
	if r.AsSink {
		d.Roles = append(d.Roles, RoleSink)
	}
	if r.AsSource {
		d.Roles = append(d.Roles, RoleSource)
	}
	var err error
	if d.CurrentSchema, err = decodeSchema(r.Schema); err != nil {
		return d, fmt.Errorf("dataset %s: %w", r.ID, err)
	}
	return d, nil
}

// CatalogDatasetGet reads the timeline one version further back than it
// returns, so the oldest returned version has its diff too.
func (s *store) CatalogDatasetGet(ctx context.Context, id string) (*CatalogDatasetDetail, error) {
	const op = "catalog dataset get"
	row, err := s.d.CatalogDatasetGet(ctx, id)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	ds, err := decodeDataset(row)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	out := &CatalogDatasetDetail{CatalogDataset: ds}
	versions, err := s.d.CatalogSchemaVersions(ctx, id, DetailTimeline+1)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	slices.Reverse(versions)
	var prev []SchemaColumn
	for i, v := range versions {
		cols, err := decodeSchema(v.Schema)
		if err != nil {
			return nil, fail(ctx, op, fmt.Errorf("dataset %s version %d: %w", id, v.Version, err))
		}
		sv := CatalogSchemaVersion{DatasetID: id, Version: v.Version, RecordedAt: v.RecordedAt.UTC(), RunID: v.RunID, Schema: cols, SchemaHash: v.SchemaHash}
		if i > 0 {
			sv.Diff = diffSchemas(prev, cols)
		}
		prev = cols
		if i == 0 && len(versions) > DetailTimeline {
			continue
		}
		out.Timeline = append(out.Timeline, sv)
	}
	if out.Timeline == nil {
		out.Timeline = []CatalogSchemaVersion{}
	}
	if out.Stats, err = s.d.CatalogStats(ctx, id, DetailStats); err != nil {
		return nil, fail(ctx, op, err)
	}
	if out.Upstream, err = s.d.CatalogEdgesTo(ctx, id, DetailEdges); err != nil {
		return nil, fail(ctx, op, err)
	}
	if out.Downstream, err = s.d.CatalogEdgesFrom(ctx, id, DetailEdges); err != nil {
		return nil, fail(ctx, op, err)
	}
	return out, nil
}

// lineageBatch bounds the datasets one level query of the walk names.
const lineageBatch = 500

// CatalogLineage walks the graph breadth-first from root, a level per
// query: the edges touching the frontier, whose far ends not reached
// before are the next frontier. Each dataset is expanded once, so a cycle
// ends the walk instead of repeating it.
func (s *store) CatalogLineage(ctx context.Context, root string, depth int) (CatalogGraph, error) {
	const op = "catalog lineage"
	if root == "" {
		edges, err := s.d.CatalogEdges(ctx, MaxLineageEdges+1)
		if err != nil {
			return CatalogGraph{}, fail(ctx, op, err)
		}
		return graph(edges), nil
	}
	depth = max(1, min(depth, MaxLineageDepth))
	reached := map[string]bool{root: true}
	kept := map[[2]string]bool{}
	var edges []CatalogEdge
	frontier := []string{root}
	for level := 0; level < depth && len(frontier) > 0 && len(edges) <= MaxLineageEdges; level++ {
		var next []string
		for chunk := range slices.Chunk(frontier, lineageBatch) {
			found, err := s.d.CatalogEdgesTouching(ctx, chunk, MaxLineageEdges+1-len(edges))
			if err != nil {
				return CatalogGraph{}, fail(ctx, op, err)
			}
			for _, e := range found {
				k := [2]string{e.SrcID, e.DstID}
				if kept[k] {
					continue
				}
				kept[k] = true
				edges = append(edges, e)
				for _, id := range k {
					if !reached[id] {
						reached[id] = true
						next = append(next, id)
					}
				}
			}
			if len(edges) > MaxLineageEdges {
				break
			}
		}
		frontier = next
	}
	slices.SortFunc(edges, func(a, b CatalogEdge) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), strings.Compare(a.SrcID, b.SrcID), strings.Compare(a.DstID, b.DstID))
	})
	return graph(edges), nil
}

// graph caps edges (read one past the cap) at MaxLineageEdges.
func graph(edges []CatalogEdge) CatalogGraph {
	g := CatalogGraph{Edges: edges}
	if len(edges) > MaxLineageEdges {
		g.Edges, g.Truncated = edges[:MaxLineageEdges], true
	}
	if g.Edges == nil {
		g.Edges = []CatalogEdge{}
	}
	return g
}

func (s *store) ConfigSnapshotPut(ctx context.Context, snap ConfigSnapshot) error {
	const op = "config snapshot put"
	if snap.Pipeline == "" || snap.RunID == "" {
		return invalid(op, errors.New("a config snapshot needs a pipeline and a run id"))
	}
	if !json.Valid(snap.Body) || len(snap.Body) == 0 || snap.Body[0] != '{' {
		return invalid(op, errors.New("a config snapshot's body is a JSON object"))
	}
	snap.RecordedAt = micro(snap.RecordedAt)
	if snap.RecordedAt.IsZero() {
		snap.RecordedAt = s.now()
	}
	return fail(ctx, op, s.d.ConfigSnapshotPut(ctx, &snap))
}

func (s *store) ConfigSnapshotGet(ctx context.Context, pipeline string) (ConfigSnapshots, error) {
	snaps, err := s.d.ConfigSnapshotGet(ctx, pipeline)
	return failed(ctx, "config snapshot get", snaps, err)
}
