package db

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CatalogRecord aggregates a batch before writing it: each dataset and each
// edge once, with the counts of the batch's invocations that touched it and
// the fields of the newest of them, so a batch of a thousand runs of one
// pipeline costs a few statements more than one run does. An invocation
// records one stats row per dataset and side, and an edge from every
// source dataset to every other sink dataset; a dataset both read and
// written is one, with both roles and the sink's count. An edge carries
// the sink's count when the invocation had one source dataset (what the
// sink wrote came from it) and the source side's count otherwise.
func (s *store) CatalogRecord(ctx context.Context, b CatalogBatch) error {
	const op = "catalog record"
	if b.ID == "" || len(b.ID) > maxBatchID {
		return invalid(op, fmt.Errorf("a catalog batch needs an id of 1 to %d bytes", maxBatchID))
	}
	invs := make([]CatalogInvocation, 0, len(b.Invocations))
	for _, inv := range b.Invocations {
		if inv.RunID == "" || inv.RowID == "" {
			return invalid(op, errors.New("a catalog record needs a run id and a row id"))
		}
		for _, side := range [2][]CatalogObservation{inv.Sources, inv.Sinks} {
			for _, o := range side {
				if o.URI == "" {
					return invalid(op, fmt.Errorf("run %s row %s: a dataset without a URI", inv.RunID, inv.RowID))
				}
			}
		}
		if len(inv.Sources)+len(inv.Sinks) > 0 {
			invs = append(invs, inv)
		}
	}
	for _, snap := range b.Snapshots {
		if snap.Pipeline == "" || snap.RunID == "" {
			return invalid(op, errors.New("a config snapshot needs a pipeline and a run id"))
		}
	}
	// Only the snapshots the batch keeps are parsed: the runs of one
	// pipeline bring one each, mostly the same body.
	at := s.now()
	snaps := latestSnapshots(b.Snapshots, at)
	for _, snap := range snaps {
		if !json.Valid(snap.Body) || len(snap.Body) == 0 || snap.Body[0] != '{' {
			return invalid(op, fmt.Errorf("config snapshot of run %s: its body is not a JSON object", snap.RunID))
		}
	}
	p := aggregate(distinct(invs), at)
	p.BatchID, p.RecordedAt, p.Snapshots = b.ID, at, snaps
	if len(p.Stats)+len(p.Snapshots) == 0 {
		return nil
	}
	// Forgetting old ids walks what a vacuum has not yet cleared of the
	// ids forgotten before, so it is done once a minute, not per batch.
	if last := s.batchIDsForgotten.Load(); at.UnixMicro()-last >= forgetBatchIDsEvery.Microseconds() && s.batchIDsForgotten.CompareAndSwap(last, at.UnixMicro()) {
		p.ForgetBefore = at.Add(-BatchIDsKept)
	}
	return fail(ctx, op, s.d.CatalogRecord(ctx, p))
}

// distinct leaves out the invocations a batch holds twice: each is
// recorded once.
func distinct(invs []CatalogInvocation) []CatalogInvocation {
	seen := make(map[[2]string]bool, len(invs))
	return slices.DeleteFunc(invs, func(inv CatalogInvocation) bool {
		k := [2]string{inv.RunID, inv.RowID}
		dup := seen[k]
		seen[k] = true
		return dup
	})
}

// statPoint is a volume point as a block stores it; at is microseconds
// since the epoch. The migrations of 00011 read and write these names.
type statPoint struct {
	Run     string    `json:"run"`
	Row     string    `json:"row"`
	Role    string    `json:"role"`
	At      int64     `json:"at"`
	Status  RunStatus `json:"status"`
	Records int64     `json:"records"`
	Bytes   *int64    `json:"bytes"`
	MS      int64     `json:"ms"`
}

// CatalogStatBlocks makes a block per dataset of a batch's stats rows
// (stats, in the order they were recorded), given each dataset's count of
// volume points once the batch's are added (recorded, by dataset id): the
// dataset's rows are its points up to that count, in order, and a block
// holds at most keep of them, the newest. A block's Floor is its count
// less keep and its PrevFloor the floor before the batch: the blocks
// ending between the two have just lost their last point kept.
func CatalogStatBlocks(stats []CatalogStatWrite, recorded map[string]int64, keep int) ([]CatalogStatBlock, error) {
	// Each dataset's points are a run of one array, in the order recorded:
	// a batch holds hundreds of points of a few datasets, which appending
	// to a slice per dataset copied over and over.
	counts := map[string]int{}
	var ids []string
	for _, st := range stats {
		if counts[st.DatasetID] == 0 {
			ids = append(ids, st.DatasetID)
		}
		counts[st.DatasetID]++
	}
	slices.Sort(ids)
	all := make([]statPoint, len(stats))
	next := make(map[string]int, len(ids))
	byDataset := make(map[string][]statPoint, len(ids))
	at := 0
	for _, id := range ids {
		next[id] = at
		byDataset[id] = all[at : at+counts[id]]
		at += counts[id]
	}
	for _, st := range stats {
		all[next[st.DatasetID]] = statPoint{
			Run: st.RunID, Row: st.RowID, Role: st.Role, At: st.RecordedAt.UnixMicro(), Status: st.Status,
			Records: st.Records, Bytes: st.Bytes, MS: st.DurationMS,
		}
		next[st.DatasetID]++
	}
	out := make([]CatalogStatBlock, 0, len(ids))
	for _, id := range ids {
		points := byDataset[id]
		floor := recorded[id] - int64(keep)
		prev := floor - int64(len(points))
		points = points[max(0, len(points)-keep):]
		body, err := json.Marshal(points)
		if err != nil {
			return nil, fmt.Errorf("encode the volume points of dataset %s: %w", id, err)
		}
		out = append(out, CatalogStatBlock{DatasetID: id, LastSeq: recorded[id], Points: int64(len(points)), Body: body, PrevFloor: prev, Floor: floor})
	}
	return out, nil
}

// statsOf decodes the newest limit points of a dataset's blocks, which
// come newest first as the driver's CatalogStatBlocks returns them.
func statsOf(blocks []CatalogStatBlockRow, limit int) ([]CatalogStat, error) {
	out := make([]CatalogStat, 0, limit)
	for _, b := range blocks {
		var points []statPoint
		if err := json.Unmarshal(b.Body, &points); err != nil {
			return nil, fmt.Errorf("volume points ending at %d: %w", b.LastSeq, err)
		}
		if int64(len(points)) != b.Points {
			return nil, fmt.Errorf("volume points ending at %d: %d stored, %d counted", b.LastSeq, len(points), b.Points)
		}
		for i := len(points) - 1; i >= 0 && len(out) < limit; i-- {
			p := points[i]
			out = append(out, CatalogStat{
				RecordedAt: time.UnixMicro(p.At).UTC(), RunID: p.Run, RowID: p.Row, Role: p.Role, Status: p.Status,
				Records: p.Records, Bytes: p.Bytes, DurationMS: p.MS,
			})
		}
	}
	return out, nil
}

// aggregate turns a batch's invocations, taken in the order they finished,
// into its rows.
func aggregate(invs []CatalogInvocation, now time.Time) *CatalogRecordParams {
	p := &CatalogRecordParams{StatsKeep: StatsKept}
	at := func(inv CatalogInvocation) time.Time {
		if inv.RecordedAt.IsZero() {
			return now
		}
		return micro(inv.RecordedAt)
	}
	slices.SortStableFunc(invs, func(a, b CatalogInvocation) int { return at(a).Compare(at(b)) })
	datasets := map[string]*CatalogDatasetWrite{}
	edges := map[[2]string]*CatalogEdgeWrite{}
	// The schema each dataset was last seen with in the batch, and its
	// hash: the runs of one pipeline see the same schema, which is hashed
	// once.
	lastSchema := map[string][]SchemaColumn{}
	lastHash := map[string]string{}
	// The ids of the batch's URIs, each hashed once.
	ids := map[string]string{}
	// Each invocation's rows are made in the same buffers, and copied out.
	rows := 0
	for _, inv := range invs {
		rows += len(inv.Sources) + len(inv.Sinks)
	}
	p.Stats = make([]CatalogStatWrite, 0, rows)
	var seen invocationRows
	for _, inv := range invs {
		when := at(inv)
		seen.of(inv, ids)
		for i := range seen.datasets {
			o := &seen.datasets[i]
			d := o.id
			w := datasets[d]
			if w == nil {
				w = &CatalogDatasetWrite{ID: d, URI: o.uri, URIFolded: strings.ToLower(o.uri), FirstSeen: when}
				datasets[d] = w
			}
			w.AsSource, w.AsSink = w.AsSource || o.asSource, w.AsSink || o.asSink
			if !when.After(w.FirstSeen) {
				w.FirstSeen = when
			}
			if !when.Before(w.LastSeen) {
				w.LastSeen, w.LastRunID, w.Pipeline, w.LastRecords, w.Kind = when, inv.RunID, inv.Pipeline, o.records, o.kind
			}
			w.TotalRecords += o.records
			w.Runs++
			if o.schema != nil && !slices.Equal(o.schema, lastSchema[d]) {
				lastSchema[d] = o.schema
				if h := schemaHash(o.schema); h != lastHash[d] {
					lastHash[d] = h
					p.Versions = append(p.Versions, CatalogVersionWrite{DatasetID: d, RecordedAt: when, RunID: inv.RunID, Schema: encodeSchema(o.schema), SchemaHash: h})
				}
			}
		}
		for _, st := range seen.stats {
			st.RunID, st.RowID, st.Status, st.RecordedAt, st.DurationMS = inv.RunID, inv.RowID, inv.Status, when, inv.Duration.Milliseconds()
			p.Stats = append(p.Stats, st)
			datasets[st.DatasetID].StatsRecorded++
		}
		for _, e := range seen.edges {
			k := [2]string{e.SrcID, e.DstID}
			w := edges[k]
			if w == nil {
				w = &CatalogEdgeWrite{SrcID: e.SrcID, DstID: e.DstID, FirstSeen: when}
				edges[k] = w
			}
			if !when.After(w.FirstSeen) {
				w.FirstSeen = when
			}
			if !when.Before(w.LastSeen) {
				w.LastSeen, w.LastRunID, w.Pipeline, w.RowID, w.LastRecords = when, inv.RunID, inv.Pipeline, inv.RowID, e.LastRecords
			}
			w.Runs++
		}
	}
	for _, w := range datasets {
		p.Datasets = append(p.Datasets, *w)
	}
	slices.SortFunc(p.Datasets, func(a, b CatalogDatasetWrite) int { return strings.Compare(a.ID, b.ID) })
	for _, w := range edges {
		p.Edges = append(p.Edges, *w)
	}
	slices.SortFunc(p.Edges, func(a, b CatalogEdgeWrite) int {
		return cmp.Or(strings.Compare(a.SrcID, b.SrcID), strings.Compare(a.DstID, b.DstID))
	})
	return p
}

// observedDataset is one dataset of an invocation, both sides merged.
type observedDataset struct {
	id, uri, kind    string
	asSource, asSink bool
	records          int64
	schema           []SchemaColumn
	sawSink          bool
}

// invocationRows are the rows of one invocation, before the batch's
// aggregation: its datasets in first-seen order, a stats row per dataset
// and side, and its edges (LastRecords holding what each carried). An
// invocation names a few datasets (at most a connector's report limit per
// side), so they are found by looking along, not through maps built per
// invocation.
type invocationRows struct {
	datasets []observedDataset
	stats    []CatalogStatWrite
	edges    []CatalogEdgeWrite
	// srcIDs and dstIDs are the ids of each side's datasets, in order.
	srcIDs, dstIDs []string
}

// of makes r inv's rows, in the buffers of the invocation before; ids
// caches DatasetID by URI.
func (r *invocationRows) of(inv CatalogInvocation, ids map[string]string) {
	r.datasets, r.stats, r.edges = r.datasets[:0], r.stats[:0], r.edges[:0]
	add := func(o CatalogObservation, role string) string {
		id, ok := ids[o.URI]
		if !ok {
			id = DatasetID(o.URI)
			ids[o.URI] = id
		}
		i := slices.IndexFunc(r.datasets, func(d observedDataset) bool { return d.id == id })
		if i < 0 {
			i = len(r.datasets)
			r.datasets = append(r.datasets, observedDataset{id: id, uri: o.URI})
		}
		d := &r.datasets[i]
		// A dataset on both sides takes the sink's view: what it holds now.
		if role == RoleSink || !d.sawSink {
			d.kind, d.records = o.Kind, o.Records
			if o.Schema != nil {
				d.schema = o.Schema
			}
		}
		d.sawSink = d.sawSink || role == RoleSink
		d.asSource, d.asSink = d.asSource || role == RoleSource, d.asSink || role == RoleSink
		if !slices.ContainsFunc(r.stats, func(st CatalogStatWrite) bool { return st.DatasetID == id && st.Role == role }) {
			r.stats = append(r.stats, CatalogStatWrite{DatasetID: id, Role: role, Records: o.Records, Bytes: o.Bytes})
		}
		return id
	}
	srcIDs, dstIDs := r.srcIDs[:0], r.dstIDs[:0]
	for _, o := range inv.Sources {
		srcIDs = append(srcIDs, add(o, RoleSource))
	}
	for _, o := range inv.Sinks {
		dstIDs = append(dstIDs, add(o, RoleSink))
	}
	r.srcIDs, r.dstIDs = srcIDs, dstIDs
	// A pair repeats only where a side names a dataset twice: the map of
	// the pairs seen is for those.
	var seenEdge map[[2]string]bool
	if len(r.datasets) < len(srcIDs)+len(dstIDs) {
		seenEdge = map[[2]string]bool{}
	}
	for i, src := range srcIDs {
		for j, dst := range dstIDs {
			if src == dst || seenEdge[[2]string{src, dst}] {
				continue
			}
			if seenEdge != nil {
				seenEdge[[2]string{src, dst}] = true
			}
			records := inv.Sources[i].Records
			if len(srcIDs) == 1 {
				records = inv.Sinks[j].Records
			}
			r.edges = append(r.edges, CatalogEdgeWrite{SrcID: src, DstID: dst, LastRecords: records})
		}
	}
}

// latestSnapshots keeps what a batch's snapshots leave behind: of each
// pipeline's, the newest two, oldest first, which applied in order make
// the newest the latest and the other the previous.
func latestSnapshots(snaps []ConfigSnapshot, now time.Time) []ConfigSnapshot {
	// Only each pipeline's newest two are kept as the batch's are read: a
	// batch brings hundreds, mostly of one pipeline. Of snapshots recorded
	// at the same moment, the later in the batch is the newer.
	type newest struct {
		last, before ConfigSnapshot
		n            int
	}
	byPipeline := map[string]*newest{}
	var names []string
	for _, snap := range snaps {
		snap.RecordedAt = micro(snap.RecordedAt)
		if snap.RecordedAt.IsZero() {
			snap.RecordedAt = now
		}
		k := byPipeline[snap.Pipeline]
		switch {
		case k == nil:
			names = append(names, snap.Pipeline)
			byPipeline[snap.Pipeline] = &newest{last: snap, n: 1}
		case !snap.RecordedAt.Before(k.last.RecordedAt):
			k.before, k.last, k.n = k.last, snap, k.n+1
		case k.n == 1 || !snap.RecordedAt.Before(k.before.RecordedAt):
			k.before, k.n = snap, k.n+1
		}
	}
	slices.Sort(names)
	out := make([]ConfigSnapshot, 0, 2*len(names))
	for _, name := range names {
		if k := byPipeline[name]; k.n > 1 {
			out = append(out, k.before, k.last)
		} else {
			out = append(out, k.last)
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
	blocks, err := s.d.CatalogStatBlocks(ctx, id, DetailStats)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	if out.Stats, err = statsOf(blocks, DetailStats); err != nil {
		// A block its reader cannot decode stays so: no retry helps.
		return nil, &Error{Op: op, Transience: Permanent, Err: fmt.Errorf("dataset %s: %w", id, err)}
	}
	edges, err := s.d.CatalogEdgesTouching(ctx, []string{id}, 2*DetailEdges)
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	out.Upstream, out.Downstream = []CatalogEdge{}, []CatalogEdge{}
	for _, e := range edges {
		if e.DstID == id && len(out.Upstream) < DetailEdges {
			out.Upstream = append(out.Upstream, e)
		}
		if e.SrcID == id && len(out.Downstream) < DetailEdges {
			out.Downstream = append(out.Downstream, e)
		}
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

func (s *store) ConfigSnapshotGet(ctx context.Context, pipeline string) (ConfigSnapshots, error) {
	snaps, err := s.d.ConfigSnapshotGet(ctx, pipeline)
	return failed(ctx, "config snapshot get", snaps, err)
}
