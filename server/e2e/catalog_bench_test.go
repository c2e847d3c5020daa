package e2e

import (
	"context"
	"fmt"
	"math"
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
// in one sitting: pairs of servers on histories of the same kind, one
// recording and one started with --no-catalog, take the same work, the
// rounds of each figure shared among serverPairs fresh pairs. The recorder
// batches the records of a busy server's runs for up to a quarter of a
// second, so a turn whose CPU is measured lasts that long past its last run
// on either server (catalogPause), and its last batch's write is counted.
// Every turn, of either server, then waits until the catalog counts the
// turn's records (at once for the server without a catalog), reading its
// /metrics, which is not counted.
//
//   - trivial: trivial runs (generate 10 rows → jsonl) from 16 clients per
//     server. Throughput (runs/s) comes from turns the servers take one
//     after the other, the order of each pair alternating so a drift of
//     the machine's load falls on both, each timed over its steady part
//     by the server's clock (steadyRate); run-ms is the median time a
//     run of those turns took to execute. on-catalog-lag-ms is how long
//     after a turn's last run the benchmark saw its catalog records all
//     written: the wait for the batch's end, its write and the polls'
//     granularity (5-40 ms). CPU time per run, all told (the
//     server and its plugin processes) and the server's alone, comes from
//     rounds in which both servers take their turn at once: a shared
//     machine's other work then slows both alike, and the ratio of their
//     CPU is steadier than the ratio of turns taken apart (on a 2-core
//     virtual machine, a round's ratio varied by ±5-9 % at once against
//     ±18-25 % apart). Side by side each run costs more CPU than alone
//     (the servers contend for the cores and their caches), so those two
//     figures are for the ratio; BenchmarkTrivialRuns has a lone server's.
//   - csv-1m: one 1,000,000-row CSV → JSONL run per turn, turns one after
//     the other: its execution time (started_at to finished_at, which the
//     server records to the microsecond), and the CPU time of the server
//     and its plugins.
//
// Each figure is reported for both servers (the median over the rounds)
// and as the ratio recording on / off: the median of the rounds' ratios,
// with its standard error (…-se), which says how far the sitting's ratio
// may be from the machine's; the rounds of all pairs count alike. Each
// server takes an unmeasured turn of each kind first: a server's first
// 1M-row runs took up to five times as long as the rest.
func BenchmarkCatalogOverhead(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			b.Run("trivial", func(b *testing.B) {
				// A turn side by side lasts from a third of a second (a fast
				// machine) to a second: waiting for the catalog's last write,
				// a few polls of 5-15 ms, is a small part of it. A turn timed
				// for throughput is longer, so that its steady part holds
				// several of the recorder's batch writes (steadyRate).
				const (
					perTurn  = 500
					rateTurn = 2500
				)
				var rate, execMS, cpu, scpu [2][]float64
				var lag []float64
				for n := range serverPairs {
					p := newServerPair(b, kind, n)
					// The plugin processes each server starts for its first
					// runs are not counted.
					p.recorded += perTurn
					for which := range 2 {
						trivialRuns(b, p.servers[which], perTurn)
						p.settle(which)
					}
					for i := range perPair(max(b.N*4, minRounds)) {
						for _, which := range turns(i) {
							t0 := time.Now()
							if which == 0 {
								p.recorded += rateTurn
							}
							trivialRuns(b, p.servers[which], rateTurn)
							p.settle(which)
							settled := time.Now()
							finished, exec := turnRuns(b, p.servers[which], t0, rateTurn)
							rate[which] = append(rate[which], steadyRate(finished))
							execMS[which] = append(execMS[which], exec)
							if which == 0 {
								lag = append(lag, float64(settled.Sub(finished[len(finished)-1]).Microseconds())/1000)
							}
						}
					}
					for range perPair(max(b.N*12, minSideBySide)) {
						p.recorded += perTurn
						var took [2][2]time.Duration
						var wg sync.WaitGroup
						for which := range 2 {
							wg.Go(func() {
								s := p.servers[which]
								cpu0, s0 := treeCPU(s), schedCPU(s.cmd.Process.Pid)
								trivialRuns(b, s, perTurn)
								time.Sleep(catalogPause)
								took[which] = [2]time.Duration{treeCPU(s) - cpu0, schedCPU(s.cmd.Process.Pid) - s0}
							})
						}
						wg.Wait()
						for which := range 2 {
							p.settle(which)
							cpu[which] = append(cpu[which], took[which][0].Seconds()*1000/perTurn)
							scpu[which] = append(scpu[which], took[which][1].Seconds()*1000/perTurn)
						}
					}
					p.stop()
				}
				report(b, rate, "runs/s", 2)
				report(b, execMS, "run-ms", 2)
				b.ReportMetric(median(lag), "on-catalog-lag-ms")
				report(b, cpu, "cpu-ms/run", 1)
				report(b, scpu, "server-cpu-ms/run", 1)
			})
			b.Run("csv-1m", func(b *testing.B) {
				var secs, cpu [2][]float64
				for n := range serverPairs {
					p := newServerPair(b, kind, n)
					// Each server reads its own copy and writes its own
					// output: replacing a file the other server wrote, or
					// reading one only one of them had written, weighed on
					// one side.
					var data [2]string
					// The run writing the dataset and the warm-up run.
					p.recorded += 2
					for which := range 2 {
						data[which] = csvDataset(b, p.servers[which], 1_000_000)
						csvRunSecs(b, p.servers[which], data[which])
						p.settle(which)
					}
					for i := range perPair(max(b.N*4, minRounds)) {
						for _, which := range turns(i) {
							s := p.servers[which]
							cpu0 := treeCPU(s)
							if which == 0 {
								p.recorded++
							}
							secs[which] = append(secs[which], csvRunSecs(b, s, data[which]))
							time.Sleep(catalogPause)
							cpu[which] = append(cpu[which], (treeCPU(s) - cpu0).Seconds())
							p.settle(which)
						}
					}
					p.stop()
				}
				report(b, secs, "s", 2)
				report(b, cpu, "cpu-s", 2)
			})
		})
	}
}

// serverPairs is how many pairs of servers a figure's rounds are shared
// among. Two servers started alike can differ by a few per cent for as
// long as they run: on one 2-core machine two servers without a catalog
// came out 0.969 and 1.003 of each other in two sittings, each of a
// standard error of 1.5 %. Rounds taken by fresh pairs, the
// recording server started first in one pair and second in the next, make
// the ratio the machine's rather than a pair's.
const serverPairs = 3

// perPair is the rounds each pair takes of at least total in all: an even
// number, so the orders of a pair's turns cancel (turns).
func perPair(total int) int {
	n := (total + serverPairs - 1) / serverPairs
	return n + n%2
}

// serverPair is two servers on histories of kind, servers[0] recording into
// the catalog and servers[1] started with --no-catalog.
type serverPair struct {
	servers [2]*server
	// recorded counts the invocations the recording server has run.
	recorded int
	b        *testing.B
}

// newServerPair starts pair n: its recording server first when n is even,
// second when it is odd.
func newServerPair(b *testing.B, kind string, n int) *serverPair {
	hist := func() string {
		if kind == "postgres" {
			return testpg.Database(b)
		}
		return ""
	}
	p := &serverPair{b: b}
	args := [2][]string{nil, {"--no-catalog"}}
	for _, which := range []int{n % 2, 1 - n%2} {
		p.servers[which] = benchServer(b, hist(), args[which]...)
	}
	return p
}

// settle waits until server which's catalog holds the records of every
// invocation the pair's recording server ran (the other server's, none).
func (p *serverPair) settle(which int) {
	awaitRecorded(p.b, p.servers[which], p.recorded*(1-which))
}

// stop stops both servers, so those of the pairs that follow run alone.
func (p *serverPair) stop() {
	for _, s := range p.servers {
		s.stop()
	}
}

// catalogPause is how long a turn whose CPU is measured lasts past its
// last run, on either server, before its CPU is read: long enough for the
// recording server's last batch to be written (on-catalog-lag-ms is a few
// tens of milliseconds; a batch waits a quarter of a second at most), so
// its write is counted. The wait for the catalog's records to be counted
// (settle) comes after the reading: it polls /metrics, and each scrape
// costs a server about 1.5 ms of CPU; the recording server, polled until
// its records are counted, took three or four scrapes a turn to the other
// server's one, which put 10-15 µs a trivial run on its side.
const catalogPause = 250 * time.Millisecond

// minRounds is the fewest rounds (a turn of each server) a figure of turns
// taken one after the other is made of, whatever -benchtime says, and
// minSideBySide the fewest of turns taken at once. task bench runs a
// benchmark once, and the figures of its four rounds were not settled: on a
// 2-core machine one such figure put the recording server's throughput 3 %
// above the other's, where twelve put it 8-11 % below. Twelve rounds
// still left the throughput ratio a standard error of 1-3.5 %, sittings
// apart by as much; twenty bring it down by a fifth. Forty rounds side by
// side bring the standard error of the CPU ratio to about 1 %.
const (
	minRounds     = 20
	minSideBySide = 40
)

// report reports the medians of both servers' figures, the median of their
// ratios and its standard error. A ratio is that of a block of rounds: one
// round for turns taken at once, two for turns taken one after the other
// (turns), whose orders then cancel. A server's turn that followed the
// other's ran faster than its second in a row (by up to a third, at
// random), and a ratio per round swung with the order of its turns.
func report(b *testing.B, figures [2][]float64, unit string, block int) {
	b.ReportMetric(median(figures[0]), "on-"+unit)
	b.ReportMetric(median(figures[1]), "off-"+unit)
	logs := make([]float64, len(figures[0])/block)
	for i := range logs {
		for j := i * block; j < (i+1)*block; j++ {
			logs[i] += math.Log(figures[0][j]/figures[1][j]) / float64(block)
		}
	}
	ratio := math.Exp(median(logs))
	b.ReportMetric(ratio, "on/off-"+unit)
	b.ReportMetric(ratio*medianSE(logs), "on/off-"+unit+"-se")
}

// medianSE is the standard error of the median of v: √(π/2)·σ/√n, that of
// a normal sample's median, with σ taken from the median absolute
// deviation (1.4826·MAD), which the odd turn a shared machine stretches
// several times over does not sway.
func medianSE(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := median(v)
	dev := make([]float64, len(v))
	for i, x := range v {
		dev[i] = math.Abs(x - m)
	}
	return math.Sqrt(math.Pi/2) * 1.4826 * median(dev) / math.Sqrt(float64(len(v)))
}

// turns is the order of the two servers' turns in round i: the recording
// one first, then the other first, and so on.
func turns(i int) []int {
	if i%2 == 0 {
		return []int{0, 1}
	}
	return []int{1, 0}
}

// turnRuns returns when each of the n runs s was given since t0 finished,
// in order, as the server recorded them, and the median time the runs took
// to execute (started_at to finished_at), in milliseconds.
func turnRuns(b *testing.B, s *server, t0 time.Time, n int) ([]time.Time, float64) {
	b.Helper()
	finished := make([]time.Time, 0, n)
	exec := make([]float64, 0, n)
	params := &client.ListRunsParams{Since: &t0, Limit: ptr(int64(1000))}
	for {
		r, err := s.admin().ListRunsWithResponse(context.Background(), params)
		if err != nil || r.JSON200 == nil {
			b.Fatalf("list: %v", err)
		}
		for _, run := range r.JSON200.Runs {
			if run.StartedAt == nil || run.FinishedAt == nil {
				b.Fatalf("run %s has not finished", run.RunId)
			}
			finished = append(finished, *run.FinishedAt)
			exec = append(exec, float64(run.FinishedAt.Sub(*run.StartedAt).Microseconds())/1000)
		}
		if r.JSON200.NextCursor == nil {
			break
		}
		params.Cursor = r.JSON200.NextCursor
	}
	if len(finished) != n {
		b.Fatalf("%d runs since the turn began, not %d", len(finished), n)
	}
	slices.SortFunc(finished, time.Time.Compare)
	return finished, median(exec)
}

// steadyRate is the rate, in runs a second, at which a turn's runs
// finished in its steady part: between the finish of its first tenth and
// that of its last, so that neither the clients' start nor their last
// few runs, at less than full concurrency, weigh on it. It is timed by
// the server's own clock (to the microsecond), not by polls that end a
// turn up to tens of milliseconds after its last run. The recording
// server's batch writes fall within that part, a batch every quarter of
// a second or 500 runs, as they do on a server under steady load; what
// its last write adds to the end of a turn is catalog lag, not lost
// throughput, and is reported apart (on-catalog-lag-ms).
func steadyRate(finished []time.Time) float64 {
	k := len(finished) / 10
	return float64(len(finished)-2*k) / finished[len(finished)-1-k].Sub(finished[k]).Seconds()
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
