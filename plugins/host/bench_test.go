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
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// BenchmarkTrivialRuns measures what a run costs through real plugin
// processes when it moves almost nothing (generate 10 rows → jsonl): the
// per-session overhead faucet serve pays for every run. Runs go one after
// the other and from 16 goroutines at once, with the sink reading the
// source directly (pipe), with the executor relaying the batches (relay),
// and piped as faucet serve runs them (served): confined to a file root
// whose data directory holds the server's files, the datasets observed
// and the output file reported. The CPU of the plugin processes and of the host
// (this process) is reported apart.
func BenchmarkTrivialRuns(b *testing.B) {
	for _, mode := range []string{"pipe", "relay", "served"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c%d", mode, conc), func(b *testing.B) {
				dir := outputDir(b)
				opts := host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: testLogger(b), MaxIdle: conc}
				exec := pipeline.ExecuteOptions{}
				if mode == "served" {
					opts.Files = servedFiles(b, dir)
					exec.Observe = true
					exec.Output = func(string, pipeline.OutputFile) {}
				}
				h, err := host.New(context.Background(), opts)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Close() })
				exec.Connectors = h
				if mode == "relay" {
					exec.Connectors = relayOnly{h}
				}
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
					res, err := pipeline.Execute(context.Background(), p, exec)
					if err != nil || res[0].RecordsWritten != 10 {
						b.Errorf("run: %+v, %v", res, err)
					}
				}
				for _, p := range plans {
					run(p)
				}
				var next atomic.Int64
				self0, plugins0 := cpuTicks(os.Getpid())
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
				self, plugins := cpuTicks(os.Getpid())
				perRun := func(ticks int64) float64 { return float64(ticks) * 1000 / ticksPerSecond / float64(b.N) }
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
				b.ReportMetric(perRun(self-self0+plugins-plugins0), "cpu-ms/run")
				b.ReportMetric(perRun(plugins-plugins0), "plugin-cpu-ms/run")
				b.ReportMetric(perRun(self-self0), "host-cpu-ms/run")
			})
		}
	}
}

// outputDir is a directory for the runs' output files, on a tmpfs where
// there is one, as the server benchmarks' (server/e2e): on a journaling file
// system the kernel's cost of replacing a file by a rename (ext4 writes the
// new file's data out first) would hide the sessions' own.
func outputDir(b *testing.B) string {
	dir, err := os.MkdirTemp("/dev/shm", "faucet-host-bench-")
	if err != nil {
		dir = b.TempDir()
	} else {
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		b.Fatal(err)
	}
	return real
}

// servedFiles is file access as faucet serve grants it: confined to root,
// whose data directory holds the server's files.
func servedFiles(b *testing.B, root string) func() *sdk.Files {
	data := filepath.Join(root, "data")
	for _, dir := range []string{data, filepath.Join(root, "plugins")} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	token := filepath.Join(data, "history.db.token")
	if err := os.WriteFile(token, []byte("s3cret"), 0o600); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(token)
	if err != nil {
		b.Fatal(err)
	}
	dev, ino, _ := sdk.FileID(fi)
	files := sdk.NewFiles([]string{root}, []sdk.DeniedFile{
		{Path: token, Device: dev, Inode: ino},
		{Path: filepath.Join(data, "history.db")},
		{Path: filepath.Join(data, "history.db-wal")},
		{Path: filepath.Join(root, "plugins"), Dir: true},
	})
	return func() *sdk.Files { return files }
}

// ticksPerSecond is the kernel's USER_HZ, the unit of /proc CPU times.
const ticksPerSecond = 100

// cpuTicks is the CPU time used so far by pid and by its live children
// (the plugin processes), in clock ticks.
func cpuTicks(pid int) (self, children int64) {
	for _, p := range liveChildren(pid) {
		children += procTicks(p)
	}
	return procTicks(pid), children
}

// procTicks is the CPU time pid used so far, in clock ticks.
func procTicks(pid int) int64 {
	// utime and stime are fields 14 and 15.
	fields := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if len(fields) < 13 {
		return 0
	}
	total := int64(0)
	for _, f := range fields[11:13] {
		n, _ := strconv.ParseInt(f, 10, 64)
		total += n
	}
	return total
}
