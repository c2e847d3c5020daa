package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ticksPerSecond is the kernel's USER_HZ, the unit of /proc CPU times.
const ticksPerSecond = 100

// statFields returns the fields of /proc/PID/stat after the parenthesised
// command (state is index 0; field n of proc(5) is index n-3), or nil when
// the process is gone.
func statFields(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
}

// cpuTicks sums fields of a stat: utime and stime (14, 15), with children
// the reaped children's cutime and cstime (16, 17) too.
func cpuTicks(pid int, children bool) int64 {
	f := statFields(pid)
	last := 13
	if children {
		last = 15
	}
	if len(f) < last {
		return 0
	}
	var n int64
	for _, s := range f[11:last] {
		v, _ := strconv.ParseInt(s, 10, 64)
		n += v
	}
	return n
}

// tree lists root and its descendants, following the kernel's per-thread
// children lists (cheap enough to sample often, unlike a scan of /proc).
func tree(root int) []int {
	out := []int{root}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			data, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
		}
	}
	return out
}

// kib reads a "Name:   123 kB" field of a /proc file, in bytes.
func kib(path, name string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return -1
}

// treeCPU is the CPU time root and its live descendants used so far, in
// seconds.
func treeCPU(root int) float64 {
	var ticks int64
	for _, pid := range tree(root) {
		ticks += cpuTicks(pid, false)
	}
	return float64(ticks) / ticksPerSecond
}

// label names a process of faucet's tree: its connector, or its command;
// "" once it is gone.
func label(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if len(data) == 0 {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	for i := 0; i+2 < len(args); i++ {
		if args[i] == "connector" && args[i+1] == "serve" {
			return args[i+2]
		}
	}
	if len(args) > 1 {
		return filepath.Base(args[0]) + " " + args[1]
	}
	return filepath.Base(args[0])
}

// treeSampler follows a process tree while something runs: the CPU time of
// every process (the largest value seen, so a process that exits keeps what
// it used up to the last sample), the peak of the tree's summed
// proportional set size, and each process's peak resident size.
type treeSampler struct {
	root int
	pss  bool
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	cpu     map[int]int64
	cpu0    map[int]int64
	peakPSS int64
	hwm     map[int]int64
	labels  map[int]string
}

// sampleEvery is the sampling period: short next to a run, and cheap (a
// few small /proc reads per process).
const sampleEvery = 20 * time.Millisecond

// startTree starts sampling root's tree; with pss it also reads
// smaps_rollup, which costs more.
func startTree(root int, pss bool) *treeSampler {
	s := &treeSampler{root: root, pss: pss, done: make(chan struct{}), cpu: map[int]int64{}, cpu0: map[int]int64{}, hwm: map[int]int64{}, labels: map[int]string{}}
	for _, pid := range tree(root) {
		s.cpu0[pid] = cpuTicks(pid, false)
	}
	s.sample()
	s.wg.Go(func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
	return s
}

func (s *treeSampler) sample() {
	var pss int64
	for _, pid := range tree(s.root) {
		c := cpuTicks(pid, false)
		status := fmt.Sprintf("/proc/%d/status", pid)
		hwm := kib(status, "VmHWM")
		var p int64
		if s.pss {
			p = kib(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss")
		}
		// Labelled again at every sample: a plugin sampled between its fork
		// and its exec still carries its parent's command line, and the
		// peak it reached then was its parent's.
		l := label(pid)
		s.mu.Lock()
		if old, seen := s.labels[pid]; l != "" && l != old {
			if seen {
				s.hwm[pid] = 0
			}
			s.labels[pid] = l
		}
		s.cpu[pid] = max(s.cpu[pid], c)
		s.hwm[pid] = max(s.hwm[pid], hwm)
		s.mu.Unlock()
		if p > 0 {
			pss += p
		}
	}
	s.mu.Lock()
	s.peakPSS = max(s.peakPSS, pss)
	s.mu.Unlock()
}

// stop takes a last sample and ends the sampling.
func (s *treeSampler) stop() {
	s.sample()
	close(s.done)
	s.wg.Wait()
}

// cpuSeconds is the CPU time the tree used since the sampler started.
func (s *treeSampler) cpuSeconds() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ticks int64
	for pid, c := range s.cpu {
		ticks += c - s.cpu0[pid]
	}
	return float64(ticks) / ticksPerSecond
}

// cpuBy returns the CPU time each kind of process used since the sampler
// started, by label (summed over the processes that share one), in
// seconds.
func (s *treeSampler) cpuBy() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]float64{}
	for pid, c := range s.cpu {
		out[s.labels[pid]] += float64(c-s.cpu0[pid]) / ticksPerSecond
	}
	return out
}

// peaks returns each process's peak resident size by label (the largest
// when several processes share one).
func (s *treeSampler) peaks() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for pid, h := range s.hwm {
		out[s.labels[pid]] = max(out[s.labels[pid]], h)
	}
	return out
}

// dbServer measures the CPU time of a local PostgreSQL server: the
// postmaster's own and that of the backends it reaped, which is where a
// finished session's work ends up.
type dbServer struct{ postmaster int }

// cpu is the server's CPU time so far, in seconds, once the backends of
// finished sessions are reaped (it waits, briefly, for the postmaster's
// children to drop back to base).
func (d dbServer) cpu(base int) float64 {
	if d.postmaster == 0 {
		return 0
	}
	for start := time.Now(); time.Since(start) < 2*time.Second && len(tree(d.postmaster))-1 > base; time.Sleep(5 * time.Millisecond) {
	}
	var ticks int64
	for _, pid := range tree(d.postmaster) {
		ticks += cpuTicks(pid, pid == d.postmaster)
	}
	return float64(ticks) / ticksPerSecond
}

// children counts the postmaster's children (its backends and workers).
func (d dbServer) children() int {
	if d.postmaster == 0 {
		return 0
	}
	return len(tree(d.postmaster)) - 1
}
