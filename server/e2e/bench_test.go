package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// benchServer starts a server for a benchmark. The queue is deep enough that
// a benchmark never meets 429.
func benchServer(b *testing.B, hist string, args ...string) *server {
	all := append([]string{"--max-queued-runs", "1000000", "--log-level", "warn"}, benchRoots()...)
	return start(b, serverOpts{history: hist, args: append(all, args...)})
}

// benchRoots are the file roots of a benchmark's servers: the tests' own,
// and the tmpfs outputDir writes beneath.
func benchRoots() []string {
	roots := []string{"--file-root", os.TempDir()}
	if st, err := os.Stat(shmDir); err == nil && st.IsDir() {
		roots = append(roots, "--file-root", shmDir)
	}
	return roots
}

const shmDir = "/dev/shm"

// outputDir is a directory for a benchmark's data and output files, on a
// tmpfs where there is one. The benchmarks measure faucet, and a trivial
// run's output is a 10-line file replaced atomically (a temporary file
// renamed over it): on a journaling file system that replacement alone costs
// the kernel several times what faucet spends on the run (ext4 writes the
// new file's data out before such a rename), a cost of the disk, not of
// faucet.
func outputDir(b *testing.B) string {
	dir, err := os.MkdirTemp(shmDir, "faucet-bench-")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func benchHistories(b *testing.B, f func(b *testing.B, hist string)) {
	b.Run("sqlite", func(b *testing.B) { f(b, "") })
	b.Run("postgres", func(b *testing.B) { f(b, testpg.Database(b)) })
}

// BenchmarkSubmit measures POST /v1/runs latency, as a client sees it, at
// concurrency 1 and 16. The runs are trivial (generate 10 rows → jsonl) and
// execute in the background meanwhile.
func BenchmarkSubmit(b *testing.B) {
	benchHistories(b, func(b *testing.B, hist string) {
		s := benchServer(b, hist)
		cfg := generateToFile(10, filepath.Join(outputDir(b), "out.jsonl"))
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
				c := s.admin()
				lat := make([]time.Duration, b.N)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= b.N {
								return
							}
							t0 := time.Now()
							r, err := c.SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: cfg})
							lat[i] = time.Since(t0)
							if err != nil || r.JSON202 == nil {
								b.Errorf("submit: %v %s", err, r.Body)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
				b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
				drain(b, s)
			})
		}
	})
}

// BenchmarkTrivialRuns measures end-to-end throughput: b.N trivial runs
// (generate 10 rows → jsonl) submitted by 16 clients, until every one has
// completed.
func BenchmarkTrivialRuns(b *testing.B) {
	benchHistories(b, func(b *testing.B, hist string) {
		s := benchServer(b, hist)
		dir := outputDir(b)
		c := s.admin()
		cpu := newCPUMeter(s)
		b.ResetTimer()
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cfg := generateToFile(10, filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", w)))
				for next.Add(1) <= int64(b.N) {
					r, err := c.SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: cfg})
					if err != nil || r.JSON202 == nil {
						b.Errorf("submit: %v %s", err, r.Body)
						return
					}
				}
			}()
		}
		wg.Wait()
		drain(b, s)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
		cpu.report(b, b.N)
		st := s.get(lastRun(b, s))
		if st.Status != client.RunStatusCompleted || st.RecordsWritten != 10 {
			b.Fatalf("last run = %+v", st)
		}
	})
}

// BenchmarkIdleRSS reports the resident memory of an idle server, alone and
// with its warm plugin processes.
func BenchmarkIdleRSS(b *testing.B) {
	for range b.N {
		s := start(b, serverOpts{})
		time.Sleep(time.Second)
		own := procStatusKB(s.cmd.Process.Pid, "VmRSS")
		total := own
		for _, child := range childPIDs(s.cmd.Process.Pid) {
			total += procStatusKB(child, "VmRSS")
		}
		b.ReportMetric(float64(own)/1024, "server-MiB")
		b.ReportMetric(float64(total)/1024, "with-plugins-MiB")
		s.stop()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// drain waits until the server (or the cluster it is a member of) has no
// queued, pending or running run.
func drain(b *testing.B, s *server) {
	b.Helper()
	for {
		r, err := s.admin().ListRunsWithResponse(context.Background(), &client.ListRunsParams{
			Status: &[]client.RunStatus{client.RunStatusQueued, client.RunStatusPending, client.RunStatusRunning},
			Limit:  ptr(int64(1)),
		})
		if err != nil || r.JSON200 == nil {
			b.Fatalf("list: %v", err)
		}
		if len(r.JSON200.Runs) == 0 {
			return
		}
		// Often enough to end the measurement close to the last run, rarely
		// enough that the listing costs the servers little.
		time.Sleep(20 * time.Millisecond)
	}
}

func lastRun(b *testing.B, s *server) string {
	r, err := s.admin().ListRunsWithResponse(context.Background(), &client.ListRunsParams{Limit: ptr(int64(1))})
	if err != nil || r.JSON200 == nil || len(r.JSON200.Runs) == 0 {
		b.Fatalf("list: %v", err)
	}
	return r.JSON200.Runs[0].RunId
}

// procStatusKB reads a KiB field of /proc/PID/status (VmRSS, VmHWM), or 0
// when the process is gone.
func procStatusKB(pid int, field string) int {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
