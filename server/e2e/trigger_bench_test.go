package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/openapi/client"
)

// BenchmarkWebhookFire measures POST /v1/triggers/{name} from 16 clients,
// in fires/s, against a reference measured in the same run on the same
// server: as many plain submits of the config the trigger binds. A fire
// binds the request body into the trigger's config and then takes the
// submit path, so the ratio (x-submit, fires/s over submits/s) is what
// triggering costs beyond a submit. The runs execute meanwhile and are
// drained after each phase.
func BenchmarkWebhookFire(b *testing.B) {
	benchHistories(b, func(b *testing.B, hist string) {
		dir := b.TempDir()
		file := filepath.Join(dir, "triggers.yaml")
		out := filepath.Join(dir, "out")
		writeFile(b, file, fmt.Sprintf(`version: 1
triggers:
  - name: bench
    type: webhook
    config: {version: 1, name: gen, pipeline: {source: {type: generate, config: {count: 10}}, sink: {type: jsonl, config: {path: "%s/${trigger.body.table}.jsonl"}}}}
`, out))
		s := start(b, serverOpts{history: hist, args: []string{"--max-queued-runs", "1000000", "--log-level", "warn", "--triggers", file}})
		c := s.admin()
		cfg := generateToFile(10, filepath.Join(out, "t.jsonl"))
		phase := func(n int, op func() error) time.Duration {
			var next atomic.Int64
			var wg sync.WaitGroup
			t0 := time.Now()
			for range 16 {
				wg.Go(func() {
					for next.Add(1) <= int64(n) {
						if err := op(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			took := time.Since(t0)
			drain(b, s)
			return took
		}
		submit := func() error {
			r, err := c.SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: cfg})
			if err != nil || r.JSON202 == nil {
				return fmt.Errorf("submit: %v %s", err, r.Body)
			}
			return nil
		}
		fire := func() error {
			req, err := http.NewRequest(http.MethodPost, s.url+"/v1/triggers/bench", strings.NewReader(`{"table": "t"}`))
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			// Read to the end, so the connection is reused as the
			// generated client's are.
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				return fmt.Errorf("fire: %s", resp.Status)
			}
			return nil
		}
		// Warm both paths (connections, plugin processes) first.
		phase(50, submit)
		phase(50, fire)
		b.ResetTimer()
		b.StopTimer()
		ref := phase(b.N, submit)
		b.StartTimer()
		fired := phase(b.N, fire)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/fired.Seconds(), "fires/s")
		b.ReportMetric(float64(b.N)/ref.Seconds(), "submits/s")
		b.ReportMetric(ref.Seconds()/fired.Seconds(), "x-submit")
	})
}
