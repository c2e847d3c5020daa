package callbacks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/postgres"
	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/server/callbacks"
)

// BenchmarkDeliveries measures the outbox end to end on each dialect:
// writers finalize b.N runs with a callback (each terminal write putting
// its delivery row in the outbox, and waking the dispatcher as the server's
// finalize does), a dispatcher with the default concurrency delivers them
// to a receiver on loopback, and each delivery's latency is the time from
// the run's terminal record (its finished_at) to the receiver reading it.
// It reports deliveries per second and the latency's p50 and p99: burst
// finalizes as fast as four writers can, so the figures are the
// dispatcher's throughput and the wait behind its backlog; paced finalizes
// 200 runs a second, below that throughput, so the latency is a delivery's
// own.
func BenchmarkDeliveries(b *testing.B) {
	for _, mode := range []struct {
		name string
		gap  time.Duration
	}{{"burst", 0}, {"paced", 5 * time.Millisecond}} {
		b.Run(mode.name, func(b *testing.B) { benchDeliveries(b, mode.gap) })
	}
}

// directPosts is the reference of a run: n posts of a callback-sized body
// to the same receiver, straight from writers goroutines with the same gap
// (no history, no outbox), as posts per second. x-direct is the outbox's
// rate over it: what durability costs against calling the target inline.
func directPosts(b *testing.B, url string, n, writers int, gap time.Duration) float64 {
	body := []byte(`{"event":"run.completed","run_id":"run-0","status":"completed","finished_at":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				resp, err := http.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				time.Sleep(gap)
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// benchDeliveries runs BenchmarkDeliveries with gap between a writer's
// finalizes.
func benchDeliveries(b *testing.B, gap time.Duration) {
	for _, dialect := range []struct {
		name string
		url  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return "sqlite:" + filepath.Join(b.TempDir(), "h.db") }},
		{"postgres", func(b *testing.B) string { return testpg.Database(b) }},
	} {
		b.Run(dialect.name, func(b *testing.B) {
			s, err := db.Open(b.Context(), dialect.url(b), db.Options{InstanceID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()

			var mu sync.Mutex
			var lat []time.Duration
			done := make(chan struct{})
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var body struct {
					FinishedAt time.Time `json:"finished_at"`
				}
				_ = json.Unmarshal(raw, &body)
				mu.Lock()
				lat = append(lat, time.Since(body.FinishedAt))
				if len(lat) == b.N {
					close(done)
				}
				mu.Unlock()
			}))
			defer rcv.Close()
			cb, _ := json.Marshal(callbacks.Spec{URL: rcv.URL + "/hook", Method: http.MethodPost})

			d := callbacks.New(callbacks.Config{Policy: callbacks.Policy{AllowHosts: []string{"127.0.0.1"}}}, s)
			if err := d.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
			defer d.Stop()

			writers := 4
			if gap > 0 {
				writers = 1
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := w; i < b.N; i += writers {
						now := time.Now()
						rec := &db.RunRecord{
							RunID: fmt.Sprintf("run-%d-%d", b.N, i), Status: db.StatusCompleted, SubmittedAt: now, StartedAt: &now,
							FinishedAt: &now, Labels: map[string]string{}, Invocations: []db.InvocationRecord{}, Callback: cb,
						}
						if _, err := s.RunFinish(b.Context(), db.RunFinal{Record: rec}); err != nil {
							b.Error(err)
							return
						}
						d.Finalized(rec)
						time.Sleep(gap)
					}
				})
			}
			wg.Wait()
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("only %d of %d callbacks arrived", len(lat), b.N)
			}
			b.StopTimer()
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "deliveries/s")
			mu.Lock()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
			mu.Unlock()
			b.ReportMetric(rate/directPosts(b, rcv.URL+"/hook", b.N, writers, gap), "x-direct")
		})
	}
}
