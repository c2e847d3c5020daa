package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	// The history the benchmark seeds is a SQLite file.
	_ "github.com/faucet-dev/faucet/db/sqlite"
)

// consoleBenchRuns is how many finished runs the history holds when the
// runs page is measured.
const consoleBenchRuns = 10_000

// BenchmarkConsoleFirstPaint measures how soon the runs page paints its
// first runs with 10,000 runs in the history, in Chromium, as the browser
// records it (Element Timing, from the navigation's start): once with an
// empty cache and then warm, the median of the warm loads. The reference,
// measured in the same loads, is when the page's /v1/runs answer arrived:
// the ratio is the paint's time over the API's, so the console's own share
// shows through a busy machine's noise. Each invocation
// loads the page a fixed number of times (server/console/web/test/bench.mjs),
// whatever b.N is: the figures come from the browser, not from b's timer.
func BenchmarkConsoleFirstPaint(b *testing.B) {
	node, chromium := consoleTools(b)
	b.StopTimer()
	hist := filepath.Join(b.TempDir(), "history.db")
	seedFinishedRuns(b, "sqlite:"+hist, consoleBenchRuns)
	s := start(b, serverOpts{history: "sqlite:" + hist, args: []string{"--log-level", "warn"}, bin: fastBin})
	b.StartTimer()
	out := runNode(b, node, []string{"FAUCET_URL=" + s.url, "FAUCET_TOKEN=" + adminToken, "FAUCET_CHROMIUM=" + chromium}, "test/bench.mjs")
	b.StopTimer()

	var cold float64
	var warm, fcp, ratio []float64
	for _, line := range strings.Split(out, "\n") {
		raw, ok := strings.CutPrefix(line, "BENCH ")
		if !ok {
			continue
		}
		var m struct {
			Cold       bool    `json:"cold"`
			RowsMS     float64 `json:"rows_ms"`
			FCPMS      float64 `json:"fcp_ms"`
			AnsweredMS float64 `json:"answered_ms"`
			Rows       int     `json:"rows"`
		}
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			b.Fatalf("bench line %q: %v", line, err)
		}
		if m.Rows == 0 || m.AnsweredMS <= 0 {
			b.Fatalf("a load painted no runs or made no /v1/runs request: %s", raw)
		}
		if m.Cold {
			cold = m.RowsMS
			continue
		}
		warm = append(warm, m.RowsMS)
		fcp = append(fcp, m.FCPMS)
		ratio = append(ratio, m.RowsMS/m.AnsweredMS)
	}
	if len(warm) == 0 {
		b.Fatal("the benchmark script reported no warm load")
	}
	b.ReportMetric(cold, "cold-rows-painted-ms")
	b.ReportMetric(median(warm), "rows-painted-ms")
	b.ReportMetric(median(fcp), "first-contentful-paint-ms")
	b.ReportMetric(median(ratio), "rows-painted/runs-answered")
}

// seedFinishedRuns writes n completed runs into the history at url, a
// millisecond apart, from a few goroutines (seeding is not measured).
func seedFinishedRuns(tb testing.TB, url string, n int) {
	tb.Helper()
	ctx := context.Background()
	st, err := db.Open(ctx, url, db.Options{InstanceID: "seed"})
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	base := time.Now().UTC().Add(-time.Duration(n) * time.Millisecond)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				submitted := base.Add(time.Duration(i) * time.Millisecond)
				started, finished := submitted.Add(time.Millisecond), submitted.Add(40*time.Millisecond)
				name := fmt.Sprintf("nightly-%04d", i%500)
				rec := &db.RunRecord{
					RunID: fmt.Sprintf("seed-%06d", i), Name: &name, Status: db.StatusCompleted,
					SubmittedAt: submitted, StartedAt: &started, FinishedAt: &finished, RecordsWritten: 1000 + i,
					Labels:      map[string]string{"team": "data"},
					Invocations: []db.InvocationRecord{{RowID: "default", RecordsWritten: 1000 + i, DurationMS: 39}},
				}
				if _, err := st.RunFinish(ctx, db.RunFinal{Record: rec}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatalf("seed the history: %v", err)
	}
}
