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
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// BenchmarkCatalogOverhead measures what recording into the catalog costs,
// in one sitting: two servers on histories of the same kind, one recording
// and one started with --no-catalog, take turns, the order of each pair of
// turns alternating so that a drift of the machine's load falls on both. A
// turn of the recording server ends once its catalog writes have landed,
// so their CPU is in its figures, and so is their time: the recorder
// batches the records of a busy server's runs for up to a quarter of a
// second, and a turn timed to its last run's end would leave its last
// batch's write out.
//
//   - trivial: trivial runs (generate 10 rows → jsonl) from 16 clients:
//     runs/s, and the CPU time the server and its plugin processes spent
//     per run, all told and the server's alone;
//   - csv-1m: one 1,000,000-row CSV → JSONL run: its execution time
//     (started_at to finished_at, which the server records to the
//     microsecond), and the CPU time of the server and its plugins.
//
// Each reports both servers' medians over the turns and their ratios
// (recording on / off). CPU time is the steadier figure on a shared
// machine: other work there stretches the wall clock, not the CPU a run
// needs. Every turn, of either server, ends reading its /metrics until
// the catalog counts the turn's records (at once for the server without
// a catalog), so the scrapes, which cost the server about a millisecond
// each, fall on both and are not taken for the catalog's.
func BenchmarkCatalogOverhead(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			hist := func() string {
				if kind == "postgres" {
					return testpg.Database(b)
				}
				return ""
			}
			servers := [2]*server{
				benchServer(b, hist()),
				benchServer(b, hist(), "--no-catalog"),
			}
			recorded := 0
			b.Run("trivial", func(b *testing.B) {
				// A turn lasts from a third of a second (a fast machine) to
				// a second: waiting for the catalog's last write, a few polls
				// of 5-15 ms, is a small part of it.
				const perTurn = 500
				var rate, cpu, scpu [2][]float64
				for i := range max(b.N*4, minRounds) {
					for _, which := range turns(i) {
						s := servers[which]
						cpu0, s0, t0 := treeCPU(s), schedCPU(s.cmd.Process.Pid), time.Now()
						trivialRuns(b, s, perTurn)
						want := 0
						if which == 0 {
							recorded += perTurn
							want = recorded
						}
						awaitRecorded(b, s, want)
						took := time.Since(t0)
						rate[which] = append(rate[which], perTurn/took.Seconds())
						cpu[which] = append(cpu[which], (treeCPU(s)-cpu0).Seconds()*1000/perTurn)
						scpu[which] = append(scpu[which], (schedCPU(s.cmd.Process.Pid)-s0).Seconds()*1000/perTurn)
					}
				}
				report(b, rate, "runs/s")
				report(b, cpu, "cpu-ms/run")
				report(b, scpu, "server-cpu-ms/run")
			})
			b.Run("csv-1m", func(b *testing.B) {
				data := csvDataset(b, servers[1], 1_000_000)
				var secs, cpu [2][]float64
				for i := range max(b.N*3, minRounds) {
					for _, which := range turns(i) {
						s := servers[which]
						cpu0 := treeCPU(s)
						secs[which] = append(secs[which], csvRunSecs(b, s, data))
						want := 0
						if which == 0 {
							recorded++
							want = recorded
						}
						awaitRecorded(b, s, want)
						cpu[which] = append(cpu[which], (treeCPU(s) - cpu0).Seconds())
					}
				}
				report(b, secs, "s")
				report(b, cpu, "cpu-s")
			})
		})
	}
}

// minRounds is the fewest rounds (a turn of each server) a figure is the
// median of, whatever -benchtime says. task bench runs a benchmark once,
// and the medians of its four rounds were not settled: on a 2-core machine
// one such figure put the recording server's throughput 3 % above the
// other's, where medians of twelve put it 8-11 % below.
const minRounds = 12

// report reports the medians of both servers' figures and their ratio.
func report(b *testing.B, figures [2][]float64, unit string) {
	on, off := median(figures[0]), median(figures[1])
	b.ReportMetric(on, "on-"+unit)
	b.ReportMetric(off, "off-"+unit)
	b.ReportMetric(on/off, "on/off-"+unit)
}

// turns is the order of the two servers' turns in round i: the recording
// one first, then the other first, and so on.
func turns(i int) []int {
	if i%2 == 0 {
		return []int{0, 1}
	}
	return []int{1, 0}
}

// trivialRuns submits n trivial runs from 16 clients and returns once the
// server has none left queued or running.
func trivialRuns(b *testing.B, s *server, n int) {
	b.Helper()
	dir := outputDir(b)
	c := s.admin()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := generateToFile(10, filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", w)))
			for next.Add(1) <= int64(n) {
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
}

// awaitRecorded waits until the server has written the catalog records of
// n invocations (counted in faucet_catalog_writes_total); for n 0 it reads
// the metrics once.
func awaitRecorded(b *testing.B, s *server, n int) {
	b.Helper()
	testwait.Until(b, time.Minute, func() error {
		if got := s.metric("faucet_catalog_writes_total", map[string]string{"kind": "lineage", "outcome": "ok"}); got < float64(n) {
			return fmt.Errorf("%v of %d catalog records written", got, n)
		}
		return nil
	})
}

// csvDataset has s write a CSV file of rows generated rows (in outputDir)
// and returns its path.
func csvDataset(b *testing.B, s *server, rows int) string {
	b.Helper()
	dir := outputDir(b)
	path := filepath.Join(dir, "data.csv")
	cfg := fmt.Sprintf("version: 1\npipeline:\n  source: {type: generate, config: {count: %d}}\n  sink: {type: csv, config: {path: %q}}\n", rows, path)
	rec := s.await(s.submit(client.SubmitRequest{Config: cfg}).RunId, client.RunStatusCompleted)
	if rec.RecordsWritten != int64(rows) {
		b.Fatalf("the dataset run wrote %d rows", rec.RecordsWritten)
	}
	return path
}

// csvRunSecs runs data through a CSV → JSONL run on s and returns its
// execution time as the server recorded it.
func csvRunSecs(b *testing.B, s *server, data string) float64 {
	b.Helper()
	out := filepath.Join(filepath.Dir(data), "out.jsonl")
	rec := s.await(s.submit(client.SubmitRequest{Config: csvToJSONL(data, out)}).RunId, client.RunStatusCompleted)
	if rec.StartedAt == nil || rec.FinishedAt == nil {
		b.Fatalf("run %s has no start or finish", rec.RunId)
	}
	return rec.FinishedAt.Sub(*rec.StartedAt).Seconds()
}

// treeCPU is the CPU time the server and its live plugin processes have
// used, to the nanosecond (the sum of their threads' schedstat).
func treeCPU(s *server) time.Duration {
	var total time.Duration
	for _, pid := range append([]int{s.cmd.Process.Pid}, childPIDs(s.cmd.Process.Pid)...) {
		total += schedCPU(pid)
	}
	return total
}

// schedCPU is the CPU time process pid's live threads have used, to the
// nanosecond.
func schedCPU(pid int) time.Duration {
	var total time.Duration
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	for _, t := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(ns)
		}
	}
	return total
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
