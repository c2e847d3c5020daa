package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// BenchmarkTemplates measures the template routes as a client sees them,
// in ops/s: a register (the config checked as a pipeline, then stored), a
// listing of 50 templates, and a trigger from 16 clients (params bound, the
// config loaded and the run admitted; the runs execute meanwhile and are
// drained before the figure is taken).
func BenchmarkTemplates(b *testing.B) {
	benchHistories(b, func(b *testing.B, hist string) {
		s := benchServer(b, hist)
		c := s.admin()
		ctx := context.Background()
		cfg := templateConfig(b.TempDir())
		register := func(id string) {
			r, err := c.RegisterTemplateWithResponse(ctx, client.RegisterTemplateRequest{Config: cfg, Id: &id, Launch: ptr(true)})
			if err != nil || r.JSON201 == nil {
				b.Fatalf("register: %v %s", err, r.Body)
			}
		}

		b.Run("register", func(b *testing.B) {
			b.ResetTimer()
			for i := range b.N {
				register(fmt.Sprintf("bench-%d", i%10))
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})

		b.Run("list50", func(b *testing.B) {
			for i := range 50 {
				register(fmt.Sprintf("listed-%02d", i))
			}
			b.ResetTimer()
			for range b.N {
				r, err := c.ListTemplatesWithResponse(ctx, nil)
				if err != nil || r.JSON200 == nil || len(r.JSON200.Templates) < 50 {
					b.Fatalf("list: %v %s", err, r.Body)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})

		b.Run("trigger16", func(b *testing.B) {
			register("triggered")
			params := map[string]any{"tenant": "bench", "count": 10}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 16 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						r, err := c.TriggerTemplateWithResponse(ctx, "triggered", client.TriggerTemplateRequest{Params: &params})
						if err != nil || r.JSON202 == nil {
							b.Errorf("trigger: %v %s", err, r.Body)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			drain(b, s)
		})
	})
}
