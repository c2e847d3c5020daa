package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
)

// BenchmarkTrivialRuns measures what a run costs through real plugin
// processes when it moves almost nothing (generate 10 rows → jsonl): the
// per-session overhead faucet serve pays for every run. Runs go one after
// the other and from 16 goroutines at once, with the sink reading the
// source directly (pipe) and with the executor relaying the batches.
func BenchmarkTrivialRuns(b *testing.B) {
	for _, mode := range []string{"pipe", "relay"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c%d", mode, conc), func(b *testing.B) {
				h, err := host.New(context.Background(), host.Options{
					Executable: faucetBin, Builtins: builtinSpecs(), Logger: testLogger(b), MaxIdle: conc,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Close() })
				var conns pipeline.Connectors = h
				if mode == "relay" {
					conns = relayOnly{h}
				}
				dir := b.TempDir()
				plans := make([]*pipeline.Plan, conc)
				for i := range plans {
					plans[i] = plan(pipeline.Invocation{
						RowID:  "default",
						Source: cfg("generate", map[string]any{"count": 10}),
						Sink:   cfg("jsonl", map[string]any{"path": filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", i))}),
					})
				}
				// Warm the pool as a serving faucet's would be.
				run := func(p *pipeline.Plan) {
					res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: conns})
					if err != nil || res[0].RecordsWritten != 10 {
						b.Errorf("run: %+v, %v", res, err)
					}
				}
				for _, p := range plans {
					run(p)
				}
				var next atomic.Int64
				cpu0 := cpuTicks(os.Getpid())
				b.ResetTimer()
				done := make(chan struct{})
				for _, p := range plans {
					go func() {
						defer func() { done <- struct{}{} }()
						for next.Add(1) <= int64(b.N) && !b.Failed() {
							run(p)
						}
					}()
				}
				for range plans {
					<-done
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
				b.ReportMetric(float64(cpuTicks(os.Getpid())-cpu0)*1000/ticksPerSecond/float64(b.N), "cpu-ms/run")
			})
		}
	}
}

// ticksPerSecond is the kernel's USER_HZ, the unit of /proc CPU times.
const ticksPerSecond = 100

// cpuTicks is the CPU time used so far by pid and its live children (the
// plugin processes), in clock ticks.
func cpuTicks(pid int) int64 {
	total := int64(0)
	for _, p := range append(liveChildren(pid), pid) {
		// utime and stime are fields 14 and 15.
		fields := statFields(fmt.Sprintf("/proc/%d/stat", p))
		if len(fields) < 13 {
			continue
		}
		for _, f := range fields[11:13] {
			n, _ := strconv.ParseInt(f, 10, 64)
			total += n
		}
	}
	return total
}
