package catalog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline"
)

// BenchmarkRecord is what the catalog costs a server per trivial run in
// process: Record, and the batched write into a SQLite history it queues,
// for runs of one pipeline (a generated source's rows, seven columns, into
// a file). The time and the allocations per run include the writes, which
// the benchmark waits for.
func BenchmarkRecord(b *testing.B) {
	s, err := db.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "history.db"), db.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := New(Config{Store: s, Queue: b.N + 1, Secrets: []string{"api-token-0123456789"}})
	r.Start()
	cols := []pipeline.Column{
		{Name: "id", Type: "integer"}, {Name: "first_name", Type: "string"}, {Name: "country", Type: "string"},
		{Name: "amount", Type: "number"}, {Name: "created_at", Type: "string"}, {Name: "active", Type: "boolean"},
		{Name: "attributes", Type: "object"},
	}
	plan := planOf("unused")
	plan.Secrets = nil
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("run-%09d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// What a run's sessions report: fresh values each run, as decoded
		// from its plugins' final messages.
		l := lineage("generate:seed=1", fmt.Sprintf("file:///out/out-%d.jsonl", i%16), 10)
		l.Source.Datasets[0].Schema = &pipeline.Schema{Columns: append([]pipeline.Column(nil), cols...)}
		l.Sink.Datasets[0].Schema = &pipeline.Schema{Columns: append([]pipeline.Column(nil), cols...)}
		r.Record(context.Background(), finished(ids[i], "gen"), plan, []pipeline.InvocationResult{{RowID: "default", Duration: time.Millisecond, Lineage: l}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r.Stop(ctx)
	b.StopTimer()
	n, err := s.CatalogDatasetGet(context.Background(), db.DatasetID("generate:seed=1"))
	if err != nil || n.Runs != int64(b.N) {
		b.Fatalf("source recorded for %d of %d runs: %v", n.Runs, b.N, err)
	}
}
