package catalog

import (
	"context"
	"encoding/json"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
)

// shardDoc is what a completed shard keeps of its lineage with its result
// (db.ShardResult.Lineage), for the one record of its run.
type shardDoc struct {
	Source side `json:"source"`
	Sink   side `json:"sink"`
}

type side struct {
	Records  int64     `json:"records"`
	Bytes    int64     `json:"bytes,omitempty"`
	Datasets []dataset `json:"datasets"`
}

type dataset struct {
	Kind   string            `json:"kind"`
	URI    string            `json:"uri"`
	Schema []pipeline.Column `json:"schema,omitempty"`
	// Observed tells an empty schema from none.
	Observed bool `json:"observed,omitempty"`
}

// ShardLineage is what a shard that completed keeps of its results'
// lineage; nil when its connectors reported none.
func (*Recorder) ShardLineage(results []pipeline.InvocationResult) json.RawMessage {
	for _, res := range results {
		if res.Err != nil || res.Lineage == nil {
			continue
		}
		doc := shardDoc{Source: toSide(res.Lineage.Source), Sink: toSide(res.Lineage.Sink)}
		if len(doc.Source.Datasets)+len(doc.Sink.Datasets) == 0 {
			return nil
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil
		}
		return b
	}
	return nil
}

func toSide(o pipeline.Observation) side {
	s := side{Records: o.Records, Bytes: o.Bytes, Datasets: []dataset{}}
	for _, d := range o.Datasets {
		ds := dataset{Kind: d.Kind, URI: d.URI}
		if d.Schema != nil {
			ds.Schema, ds.Observed = d.Schema.Columns, true
		}
		s.Datasets = append(s.Datasets, ds)
	}
	return s
}

// RecordSharded queues the record of a sharded run, made once, as one
// invocation of its single row: the datasets its completed shards
// reported (read back from the store by the writer, so the caller never
// waits on the database), their counts summed, their schemas merged; and
// the config it executed. A nil Recorder records nothing.
func (r *Recorder) RecordSharded(_ context.Context, run *db.RunRecord, plan *pipeline.Plan) {
	if r == nil || run == nil || plan == nil || len(plan.Invocations) != 1 {
		return
	}
	r.enqueue(pending{runID: run.RunID, snapshot: r.snapshot(run, plan), sharded: &shardedRun{run: run, plan: plan}})
}

// shardedRun is a sharded run waiting for its record.
type shardedRun struct {
	run  *db.RunRecord
	plan *pipeline.Plan
}

// shardedInvocations is a sharded run's one invocation, from what its
// completed shards kept; none when they kept nothing or it cannot be read
// (which is logged and counted).
func (r *Recorder) shardedInvocations(ctx context.Context, sh *shardedRun) []db.CatalogInvocation {
	var docs []json.RawMessage
	err := r.attempt(ctx, func(ctx context.Context) error {
		var err error
		docs, err = r.cfg.Store.ShardLineages(ctx, sh.run.RunID)
		return err
	})
	if err != nil {
		r.cfg.Log.Warn("read the lineage of a sharded run's shards; its datasets are left out", "run_id", sh.run.RunID, "error", err)
		if r.cfg.Metrics != nil {
			r.cfg.Metrics.CatalogWrites.WithLabelValues("lineage", "failed").Inc()
		}
		return nil
	}
	var merged pipeline.Lineage
	for _, raw := range docs {
		var doc shardDoc
		if err := json.Unmarshal(raw, &doc); err != nil {
			r.cfg.Log.Warn("a shard's lineage does not decode; the catalog leaves it out", "run_id", sh.run.RunID, "error", err)
			continue
		}
		merged.Source = mergeSide(merged.Source, doc.Source)
		merged.Sink = mergeSide(merged.Sink, doc.Sink)
	}
	var took time.Duration
	if sh.run.StartedAt != nil && sh.run.FinishedAt != nil {
		took = sh.run.FinishedAt.Sub(*sh.run.StartedAt)
	}
	inv, ok := r.invocation(sh.run, sh.plan, sh.plan.Invocations[0].RowID, took, merged, r.uriCleaner(sh.plan))
	if !ok {
		return nil
	}
	return []db.CatalogInvocation{inv}
}

// mergeSide adds a shard's side to the run's: counts summed, each dataset
// once, with the columns of every shard's sample.
func mergeSide(o pipeline.Observation, s side) pipeline.Observation {
	o.Records += s.Records
	o.Bytes += s.Bytes
	for _, d := range s.Datasets {
		i := 0
		for i < len(o.Datasets) && o.Datasets[i].URI != d.URI {
			i++
		}
		if i == len(o.Datasets) {
			o.Datasets = append(o.Datasets, pipeline.Dataset{Kind: d.Kind, URI: d.URI})
		}
		if d.Observed {
			o.Datasets[i].Schema = mergeSchema(o.Datasets[i].Schema, d.Schema)
		}
	}
	return o
}

// mergeSchema unites two samples of one dataset: every column of either,
// in first-seen order, nullable where either saw it nullable or only one
// saw it at all, and of one type only where both agree (integers among
// numbers being numbers).
func mergeSchema(s *pipeline.Schema, cols []pipeline.Column) *pipeline.Schema {
	if s == nil {
		return &pipeline.Schema{Columns: append([]pipeline.Column{}, cols...)}
	}
	index := map[string]int{}
	for i, c := range s.Columns {
		index[c.Name] = i
	}
	seen := map[string]bool{}
	for _, c := range cols {
		seen[c.Name] = true
		i, ok := index[c.Name]
		if !ok {
			c.Nullable = true
			s.Columns = append(s.Columns, c)
			continue
		}
		have := &s.Columns[i]
		have.Nullable = have.Nullable || c.Nullable
		switch {
		case have.Type == c.Type:
		case (have.Type == "integer" && c.Type == "number") || (have.Type == "number" && c.Type == "integer"):
			have.Type = "number"
		default:
			have.Type = ""
		}
	}
	for i := range s.Columns {
		if !seen[s.Columns[i].Name] {
			s.Columns[i].Nullable = true
		}
	}
	return s
}
