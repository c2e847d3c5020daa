package dbtest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// Benchmark measures the hot store operations against the dialect newURL's
// databases belong to, and reports each as ops/s.
func Benchmark(b *testing.B, newURL func(t testing.TB) string) {
	b.Run("IdempotencyClaim", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		var n atomic.Int64
		done := measure(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				key := fmt.Sprintf("key-%d", i)
				if _, err := s.IdempotencyClaim(ctx, key, "fp", key, time.Hour); err != nil {
					b.Error(err)
					return
				}
			}
		})
		done()
	})

	b.Run("RunSubmit", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		rec := fullRun("")
		done := measure(b)
		for i := range b.N {
			r := *rec
			r.RunID = fmt.Sprintf("run-%d", i)
			if err := s.RunSubmit(ctx, &r, nil); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})

	b.Run("RunLogAppend", func(b *testing.B) {
		// A short run's log, persisted whole when it finishes.
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		lines := logLines(1, 6, now())
		done := measure(b)
		for i := range b.N {
			if err := s.RunLogAppend(ctx, fmt.Sprintf("run-%d", i), lines, keep(100_000)); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})

	b.Run("RunLogAppendAtCap", func(b *testing.B) {
		// A long run at its line cap: every batch of 500 drops 500 old lines.
		const capLines, batch = 20_000, 500
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		seq := int64(1)
		for seq <= capLines {
			if err := s.RunLogAppend(ctx, "long", logLines(seq, seq+batch-1, now()), keep(capLines)); err != nil {
				b.Fatal(err)
			}
			seq += batch
		}
		done := measure(b)
		for range b.N {
			if err := s.RunLogAppend(ctx, "long", logLines(seq, seq+batch-1, now()), keep(capLines)); err != nil {
				b.Fatal(err)
			}
			seq += batch
		}
		done()
	})

	b.Run("RunLifecycle16", func(b *testing.B) {
		// What faucet serve writes for a trivial run (queued, audit, running,
		// log, terminal), from 16 runs at once; an op is one whole run.
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		var n atomic.Int64
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		done := measure(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := runLifecycle(ctx, s, fmt.Sprintf("run-%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		done()
	})

	b.Run("CatalogRecord", func(b *testing.B) {
		// Batches of trivial runs' records (one source, one sink, their
		// schema unchanged) into datasets already at their cap of volume
		// points.
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		schema := []db.SchemaColumn{{Name: "id", Type: "integer"}, {Name: "name", Type: "string"}, {Name: "amount", Type: "number"}}
		inv := func(i int) db.CatalogInvocation {
			return db.CatalogInvocation{RunID: fmt.Sprintf("run-%d", i), Pipeline: "p", RowID: "default", Status: db.StatusCompleted, Duration: time.Millisecond,
				Sources: []db.CatalogObservation{{URI: "generate:seed=1", Kind: "generate", Records: 10, Schema: schema}},
				Sinks:   []db.CatalogObservation{{URI: "file:///out.jsonl", Kind: "jsonl", Records: 10, Schema: schema}}}
		}
		for i := range db.StatsKept {
			if err := s.CatalogRecord(ctx, batch(inv(-1-i))); err != nil {
				b.Fatal(err)
			}
		}
		for _, size := range []int{1, 32, 128} {
			b.Run(fmt.Sprintf("batch%d", size), func(b *testing.B) {
				done := measure(b)
				for i := range b.N {
					bt := batch()
					for j := range size {
						bt.Invocations = append(bt.Invocations, inv(size*i+j))
					}
					if err := s.CatalogRecord(ctx, bt); err != nil {
						b.Fatal(err)
					}
				}
				done()
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "invocations/s")
			})
		}
	})

	b.Run("RunGet", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		seed(b, s, 1000, db.StatusCompleted)
		done := measure(b)
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				i++
				if _, err := s.RunGet(ctx, fmt.Sprintf("run-%06d", i%1000)); err != nil {
					b.Error(err)
					return
				}
			}
		})
		done()
	})

	b.Run("RunListPage50", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		seed(b, s, 2000, db.StatusCompleted)
		page, err := s.RunList(ctx, db.ListFilter{Limit: 50})
		if err != nil || page.NextCursor == nil {
			b.Fatalf("first page: %v", err)
		}
		cursor := *page.NextCursor
		done := measure(b)
		for range b.N {
			if _, err := s.RunList(ctx, db.ListFilter{Limit: 50, Cursor: cursor}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})

	b.Run("RunListActive", func(b *testing.B) {
		// What a dashboard (or faucet serve's own drain) polls: the running
		// runs, among a long history of finished ones.
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		seed(b, s, 5000, db.StatusCompleted)
		for i := range 3 {
			submit(b, s, newRun(fmt.Sprintf("active-%d", i), db.StatusRunning, now().Add(-time.Hour)))
		}
		f := db.ListFilter{Statuses: []db.RunStatus{db.StatusQueued, db.StatusRunning}, Limit: 50}
		done := measure(b)
		for range b.N {
			page, err := s.RunList(ctx, f)
			if err != nil || len(page.Runs) != 3 {
				b.Fatalf("list: %d runs, %v", len(page.Runs), err)
			}
		}
		done()
	})

	// A claim costs more the more runs were claimed before it (the pending
	// index keeps their entries until a vacuum), so the figure depends on
	// b.N: compare two stores at one -benchtime Nx, not at a duration.
	for _, claimers := range []int{1, 4} {
		b.Run(fmt.Sprintf("RunClaimPending16/claimers=%d", claimers), func(b *testing.B) {
			url := newURL(b)
			stores := make([]db.Store, claimers)
			for i := range stores {
				stores[i] = open(b, url, db.Options{InstanceID: fmt.Sprintf("bench-%d", i)})
			}
			ctx := context.Background()
			// Every iteration claims one batch of 16.
			seed(b, stores[0], 16*b.N, db.StatusPending)
			var batches atomic.Int64
			done := measure(b)
			var wg sync.WaitGroup
			for _, s := range stores {
				wg.Go(func() {
					for batches.Add(1) <= int64(b.N) {
						runs, err := s.RunClaimPending(ctx, 16)
						if err != nil {
							b.Error(err)
							return
						}
						if len(runs) == 0 {
							b.Error("ran out of pending runs")
							return
						}
					}
				})
			}
			wg.Wait()
			done()
		})
	}

	b.Run("RunFinishOwned", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		recs := seed(b, s, b.N, db.StatusRunning)
		done := measure(b)
		for i := range b.N {
			r := recs[i]
			r.Status = db.StatusCompleted
			r.RecordsWritten = 100
			ok, err := s.RunFinish(ctx, db.RunFinal{Record: &r, Owned: true})
			if err != nil || !ok {
				b.Fatalf("finish: %v, %v", ok, err)
			}
		}
		done()
	})

	benchmarkTemplates(b, newURL)
}

// benchmarkTemplates measures the template registry's hot paths: a
// register (its version, a tag, the prune past the retained versions), the
// listing of a registry of 100 templates, and the store's share of a
// trigger (the template's state and version, then the run with its audit
// entry), from 16 triggers at once.
func benchmarkTemplates(b *testing.B, newURL func(t testing.TB) string) {
	b.Run("TemplateRegister", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		d := draft("")
		d.Tags = []string{"dev"}
		done := measure(b)
		for i := range b.N {
			d.ID = fmt.Sprintf("tpl-%d", i%10)
			if _, err := s.TemplateRegister(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})

	b.Run("TemplateList100", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		for i := range 100 {
			d := draft(fmt.Sprintf("tpl-%03d", i))
			for v := range 5 {
				d.Launch = v%2 == 0
				if _, err := s.TemplateRegister(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		}
		done := measure(b)
		for range b.N {
			sums, err := s.TemplateList(ctx, db.TemplateListFilter{})
			if err != nil || len(sums) != 100 {
				b.Fatalf("list: %d templates, %v", len(sums), err)
			}
		}
		done()
	})

	b.Run("TemplateTrigger16", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		d := draft("nightly")
		d.Launch = true
		register(b, s, d)
		var n atomic.Int64
		b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
		done := measure(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := triggerRun(ctx, s, "nightly", fmt.Sprintf("run-%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		done()
	})
}

// triggerRun is what a trigger asks of the store: the template's state to
// resolve stable, that version with the state it checks deprecations in,
// and the run with its audit entry.
func triggerRun(ctx context.Context, s db.Store, template, id string) error {
	st, err := s.TemplateState(ctx, template)
	if err != nil {
		return err
	}
	detail, err := s.TemplateGet(ctx, template, *st.Stable)
	if err != nil {
		return err
	}
	rec := newRun(id, db.StatusQueued, now())
	rec.Name, rec.ConfigFormat = detail.Version.Name, ptr("json")
	rec.TemplateID, rec.TemplateVersion = &template, &detail.Version.Version
	audit := &db.AuditEntry{ID: id, Timestamp: now(), Principal: "admin", Role: "admin", Action: "run.submit", RunID: &id, Result: "ok"}
	return s.RunSubmit(ctx, rec, audit)
}

// runLifecycle writes what faucet serve stores for one short run: the
// submit with its audit entry, the start, a flush of its log and the finish
// with its last lines.
func runLifecycle(ctx context.Context, s db.Store, id string) error {
	rec := newRun(id, db.StatusQueued, now())
	rec.Name, rec.ConfigFormat = ptr("gen"), ptr("yaml")
	audit := &db.AuditEntry{ID: id, Timestamp: now(), Principal: "admin", Role: "admin", Action: "run.submit", RunID: &id, Result: "ok"}
	if err := s.RunSubmit(ctx, rec, audit); err != nil {
		return err
	}
	started := now()
	if _, err := s.RunStart(ctx, id, started); err != nil {
		return err
	}
	if err := s.RunLogAppend(ctx, id, logLines(1, 4, now()), keep(100_000)); err != nil {
		return err
	}
	rec.Status, rec.StartedAt, rec.RecordsWritten = db.StatusCompleted, &started, 10
	rec.Invocations = []db.InvocationRecord{{RowID: "default", RecordsWritten: 10, DurationMS: 3}}
	_, err := s.RunFinish(ctx, db.RunFinal{Record: rec, Lines: logLines(5, 6, now()), Cap: keep(100_000)})
	return err
}

// seed writes n runs with the given status, submitted a millisecond apart,
// from a few goroutines (seeding is not what is measured).
func seed(b *testing.B, s db.Store, n int, status db.RunStatus) []db.RunRecord {
	b.Helper()
	ctx := context.Background()
	base := now().Add(-time.Duration(n) * time.Millisecond)
	recs := make([]db.RunRecord, n)
	for i := range n {
		recs[i] = *newRun(fmt.Sprintf("run-%06d", i), status, base.Add(time.Duration(i)*time.Millisecond))
		recs[i].Labels = map[string]string{"team": "data"}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if err := s.RunSubmit(ctx, &recs[i], nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return recs
}

// measure resets b's timer and returns the function that reports, once the
// measured loop is done, its ops/s and the CPU time this process spent per op
// (the whole of SQLite's work; only the client's share of Postgres'), which
// stays meaningful when other work competes for the machine.
func measure(b *testing.B) func() {
	b.ResetTimer()
	start := processCPU()
	return func() {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		if cpu := processCPU(); cpu > 0 {
			b.ReportMetric(float64((cpu-start).Microseconds())/float64(b.N), "cpu-µs/op")
		}
	}
}
