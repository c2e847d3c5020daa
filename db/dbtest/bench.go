package dbtest

import (
	"context"
	"fmt"
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
		b.ResetTimer()
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
		reportOps(b)
	})

	b.Run("RunUpsert", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		rec := fullRun("")
		b.ResetTimer()
		for i := range b.N {
			r := *rec
			r.RunID = fmt.Sprintf("run-%d", i)
			if err := s.RunUpsert(ctx, &r); err != nil {
				b.Fatal(err)
			}
		}
		reportOps(b)
	})

	b.Run("RunGet", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		seed(b, s, 1000, db.StatusCompleted)
		b.ResetTimer()
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
		reportOps(b)
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
		b.ResetTimer()
		for range b.N {
			if _, err := s.RunList(ctx, db.ListFilter{Limit: 50, Cursor: cursor}); err != nil {
				b.Fatal(err)
			}
		}
		reportOps(b)
	})

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
			b.ResetTimer()
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
			reportOps(b)
		})
	}

	b.Run("RunFinalizeOwned", func(b *testing.B) {
		s := open(b, newURL(b), db.Options{InstanceID: "bench"})
		ctx := context.Background()
		recs := seed(b, s, b.N, db.StatusRunning)
		b.ResetTimer()
		for i := range b.N {
			r := recs[i]
			r.Status = db.StatusCompleted
			r.RecordsWritten = 100
			ok, err := s.RunFinalizeOwned(ctx, &r)
			if err != nil || !ok {
				b.Fatalf("finalize: %v, %v", ok, err)
			}
		}
		reportOps(b)
	})
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
				if err := s.RunUpsert(ctx, &recs[i]); err != nil {
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

func reportOps(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
