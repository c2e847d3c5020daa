package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// benchMember starts one cluster member for a benchmark.
func benchMember(b *testing.B, hist string, args ...string) *member {
	all := append([]string{"--cluster", "--max-queued-runs", "1000000", "--log-level", "warn"}, args...)
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
			dir := b.TempDir()
			cpu := newCPUMeter(members)
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
			servers, plugins := cpu.used()
			b.ReportMetric(servers.Seconds()*1000/float64(b.N), "server-cpu-ms/run")
			b.ReportMetric(plugins.Seconds()*1000/float64(b.N), "plugin-cpu-ms/run")
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

// cpuMeter measures the CPU time the members' processes and their plugin
// processes use from its creation on.
type cpuMeter struct {
	members []*member
	start   map[int]time.Duration
}

func newCPUMeter(members []*member) *cpuMeter {
	m := &cpuMeter{members: members, start: map[int]time.Duration{}}
	for _, mem := range members {
		pid := mem.cmd.Process.Pid
		m.start[pid] = procCPU(pid)
		for _, child := range childPIDs(pid) {
			m.start[child] = procCPU(child)
		}
	}
	return m
}

// used returns the CPU time used since the meter started by the servers and
// by their plugin processes.
func (m *cpuMeter) used() (servers, plugins time.Duration) {
	for _, mem := range m.members {
		pid := mem.cmd.Process.Pid
		servers += procCPU(pid) - m.start[pid]
		for _, child := range childPIDs(pid) {
			plugins += procCPU(child) - m.start[child]
		}
	}
	return servers, plugins
}

// procCPU is the user and system CPU time a process used so far.
func procCPU(pid int) time.Duration {
	// utime and stime are fields 14 and 15, in clock ticks (100 a second
	// on Linux).
	fields := statFields(pid)
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
