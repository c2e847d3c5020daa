package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// benchMember starts one cluster member for a benchmark.
func benchMember(b *testing.B, hist string, args ...string) *member {
	all := append(append([]string{"--cluster", "--max-queued-runs", "1000000", "--log-level", "warn"}, benchRoots()...), args...)
	s := start(b, serverOpts{history: hist, args: all, bin: fastBin})
	rs := s.ready()
	if rs.Cluster.Instance == nil {
		b.Fatalf("member's /readyz: %+v", rs)
	}
	return &member{server: s, id: *rs.Cluster.Instance}
}

// BenchmarkClusterTrivialRuns measures end-to-end throughput of a cluster on
// Postgres: b.N trivial runs (generate 10 rows → jsonl) submitted by 16
// clients spread over the members, until every one has completed; with 1, 2
// and 3 members on this one machine.
func BenchmarkClusterTrivialRuns(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			hist := testpg.Database(b)
			members := make([]*member, n)
			for i := range members {
				members[i] = benchMember(b, hist)
			}
			dir := outputDir(b)
			servers := make([]*server, n)
			for i, m := range members {
				servers[i] = m.server
			}
			cpu := newCPUMeter(servers...)
			b.ResetTimer()
			start := time.Now()
			var next atomic.Int64
			var wg sync.WaitGroup
			for w := range 16 {
				wg.Go(func() {
					c := members[w%n].admin()
					cfg := generateToFile(10, filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", w)))
					for next.Add(1) <= int64(b.N) {
						r, err := c.SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: cfg})
						if err != nil || r.JSON202 == nil {
							b.Errorf("submit: %v %s", err, r.Body)
							return
						}
					}
				})
			}
			wg.Wait()
			drain(b, members[0].server)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
			cpu.report(b, b.N)
			reportStartLatency(b, members[0].server)
			if st := members[0].get(lastRun(b, members[0].server)); st.Status != client.RunStatusCompleted || st.RecordsWritten != 10 {
				b.Fatalf("last run = %+v", st)
			}
		})
	}
}

// BenchmarkClusterReclaim measures how long a cluster takes to take over a
// killed member's run: from the SIGKILL until a survivor has claimed the run
// again, with a 2 s lease and the default 2 s poll.
func BenchmarkClusterReclaim(b *testing.B) {
	hist := testpg.Database(b)
	args := []string{"--lease-ttl-secs", "2"}
	survivor := benchMember(b, hist, args...)
	dir := b.TempDir()
	var total time.Duration
	b.StopTimer()
	for done := 0; done < b.N; {
		victim := benchMember(b, hist, args...)
		id := victim.submit(client.SubmitRequest{Config: holding(1, filepath.Join(dir, fmt.Sprintf("hold-%d.jsonl", done)))}).RunId
		if claimedBy(b, survivor.server, id, 0) != victim.id {
			// The survivor's poll took it first: try again.
			victim.stop()
			survivor.admin().CancelRunWithResponse(context.Background(), id)
			continue
		}
		b.StartTimer()
		killed := time.Now()
		victim.kill9()
		claimedBy(b, survivor.server, id, 1)
		total += time.Since(killed)
		b.StopTimer()
		survivor.admin().CancelRunWithResponse(context.Background(), id)
		survivor.await(id, client.RunStatusCancelled)
		done++
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-reclaim")
}

// cpuMeter measures the CPU time the servers' processes and their plugin
// processes use from its creation on, and the benchmark's own (the
// clients), which shares the machine with them.
type cpuMeter struct {
	servers []*server
	start   map[int]time.Duration
	self    time.Duration
}

func newCPUMeter(servers ...*server) *cpuMeter {
	m := &cpuMeter{servers: servers, start: map[int]time.Duration{}, self: selfCPU()}
	for _, s := range servers {
		pid := s.cmd.Process.Pid
		m.start[pid] = procCPU(pid)
		m.start[-pid] = reapedCPU(pid)
		for _, child := range childPIDs(pid) {
			m.start[child] = procCPU(child) + reapedCPU(child)
		}
	}
	return m
}

// used returns the CPU time used since the meter started by the servers,
// by their plugin processes (those that exited meanwhile included), and by
// this process.
func (m *cpuMeter) used() (servers, plugins, self time.Duration) {
	for _, s := range m.servers {
		pid := s.cmd.Process.Pid
		servers += procCPU(pid) - m.start[pid]
		plugins += reapedCPU(pid) - m.start[-pid]
		for _, child := range childPIDs(pid) {
			plugins += procCPU(child) + reapedCPU(child) - m.start[child]
		}
	}
	return servers, plugins, selfCPU() - m.self
}

// report reports the CPU used per run of n runs.
func (m *cpuMeter) report(b *testing.B, n int) {
	servers, plugins, self := m.used()
	b.ReportMetric(servers.Seconds()*1000/float64(n), "server-cpu-ms/run")
	b.ReportMetric(plugins.Seconds()*1000/float64(n), "plugin-cpu-ms/run")
	b.ReportMetric((servers+plugins).Seconds()*1000/float64(n), "faucet-cpu-ms/run")
	b.ReportMetric(self.Seconds()*1000/float64(n), "client-cpu-ms/run")
}

// procCPU is the user and system CPU time a process used so far.
func procCPU(pid int) time.Duration { return statTicks(pid, 11, 12) }

// reapedCPU is the CPU time of a process's children that exited and were
// waited for.
func reapedCPU(pid int) time.Duration { return statTicks(pid, 13, 14) }

// statTicks sums fields of /proc/PID/stat (as statFields indexes them),
// in clock ticks (100 a second on Linux).
func statTicks(pid int, fields ...int) time.Duration {
	f := statFields(pid)
	var ticks int64
	for _, i := range fields {
		if i < len(f) {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// selfCPU is the CPU time this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportStartLatency reports the p50 and p99 of how long the runs of the
// server's history waited from their submit to their start.
func reportStartLatency(b *testing.B, s *server) {
	b.Helper()
	var waits []time.Duration
	var cursor *string
	for {
		r, err := s.admin().ListRunsWithResponse(context.Background(), &client.ListRunsParams{Limit: ptr(int64(500)), Cursor: cursor})
		if err != nil || r.JSON200 == nil {
			b.Fatalf("list: %v", err)
		}
		for _, run := range r.JSON200.Runs {
			if run.StartedAt != nil {
				waits = append(waits, run.StartedAt.Sub(run.SubmittedAt))
			}
		}
		if cursor = r.JSON200.NextCursor; cursor == nil {
			break
		}
	}
	if len(waits) == 0 {
		b.Fatal("no run started")
	}
	slices.Sort(waits)
	b.ReportMetric(ms(waits[len(waits)/2]), "start-p50-ms")
	b.ReportMetric(ms(waits[min(len(waits)-1, len(waits)*99/100)]), "start-p99-ms")
}

// BenchmarkClusterSubmitToStart measures how long a run waits from its
// submit to its start in a cluster of 3 on Postgres, one run at a time:
// "idle", submitted round-robin to idle members; "busy-member", every run
// submitted to a member whose one slot a held run keeps busy, so another
// member must notice it (a wake-up, or its poll, at the default 2 s).
func BenchmarkClusterSubmitToStart(b *testing.B) {
	for _, mode := range []string{"idle", "busy-member"} {
		b.Run(mode, func(b *testing.B) {
			hist := testpg.Database(b)
			dir := outputDir(b)
			var entry *member
			members := make([]*member, 0, 3)
			if mode == "busy-member" {
				entry = benchMember(b, hist, "--max-concurrent-runs", "1")
				hold := entry.submit(client.SubmitRequest{Config: holding(1, filepath.Join(dir, "hold.jsonl"))}).RunId
				entry.await(hold, client.RunStatusRunning)
				members = append(members, entry)
			}
			for len(members) < 3 {
				members = append(members, benchMember(b, hist))
			}
			cfg := generateToFile(10, filepath.Join(dir, "out.jsonl"))
			b.ResetTimer()
			for i := range b.N {
				via := entry
				if via == nil {
					via = members[i%3]
				}
				via.await(via.submit(client.SubmitRequest{Config: cfg}).RunId, client.RunStatusCompleted)
			}
			b.StopTimer()
			reportStartLatency(b, members[0].server)
		})
	}
}
