package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// runFigures are one `faucet run`, as a user runs it (or one run of a
// `faucet serve`): the command's wall time and its process tree's CPU time,
// peak summed PSS and each process's peak RSS.
type runFigures struct {
	seconds, cpu float64
	// db is the database server's CPU time meanwhile, when measured.
	db      float64
	peakPSS int64
	peaks   map[string]int64
	// cpuBy is the CPU time of each kind of process of the tree.
	cpuBy map[string]float64
}

// faucetRun runs `faucet run` on a pipeline config (YAML text) and checks
// that it moved rows records.
func (b *bench) faucetRun(ctx context.Context, name, config string, rows int64, args ...string) (runFigures, error) {
	path := filepath.Join(b.tmp, name+".yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return runFigures{}, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, b.faucet, append([]string{"run", path}, args...)...)
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runFigures{}, err
	}
	s := startTree(cmd.Process.Pid, true)
	err := cmd.Wait()
	elapsed := time.Since(start).Seconds()
	s.stop()
	if err != nil {
		return runFigures{}, fmt.Errorf("faucet run %s: %w\n%s", name, err, stderr.String())
	}
	if want := message.NewPrinter(language.English).Sprintf("%d records in", rows); !strings.Contains(stderr.String(), want) {
		return runFigures{}, fmt.Errorf("faucet run %s did not report %q:\n%s", name, want, stderr.String())
	}
	cpu := s.cpuSeconds()
	if u := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(); u > cpu {
		// The tree's reaped processes, whose last moments no sample saw.
		cpu = u
	}
	return runFigures{seconds: elapsed, cpu: cpu, peakPSS: s.peakPSS, peaks: s.peaks(), cpuBy: s.cpuBy()}, nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// peaksText lists the per-process peaks, largest first.
func peaksText(peaks map[string]int64) string {
	var names []string
	for n := range peaks {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(peaks[b] - peaks[a]) })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", n, mib(peaks[n])))
	}
	return strings.Join(parts, ", ")
}

// medianRun is the median run by time, with the largest peaks of all.
func medianRun(runs []runFigures) runFigures {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b runFigures) int { return int((a.seconds - b.seconds) * 1e6) })
	m := sorted[len(sorted)/2]
	m.peaks = map[string]int64{}
	for _, r := range runs {
		m.peakPSS = max(m.peakPSS, r.peakPSS)
		for k, v := range r.peaks {
			m.peaks[k] = max(m.peaks[k], v)
		}
	}
	return m
}

// measureMemory runs CSV → JSONL with `faucet run` on the dataset and, when
// big names one, on a larger dataset: the tree's peak PSS, and each plugin's
// peak RSS on both sizes.
func (b *bench) measureMemory(ctx context.Context, big string, bigRows int64) error {
	config := func(data, out string) string {
		return fmt.Sprintf("version: 1\nname: csv-to-jsonl\npipeline:\n  source: {type: csv, config: {path: %q}}\n  sink: {type: jsonl, config: {path: %q}}\n", data, out)
	}
	var runs []runFigures
	for range b.repeat {
		f, err := b.faucetRun(ctx, "csv-jsonl", config(b.data, filepath.Join(b.out, "run.jsonl")), b.rows)
		if err != nil {
			return err
		}
		runs = append(runs, f)
	}
	m := medianRun(runs)
	fmt.Printf("\nfaucet run csv → jsonl, %d rows (median of %d): %.0fk rows/s, CPU %.2f s; peak PSS of the process tree %.1f MiB (≤ 40 %s); peak RSS per process (MiB): %s\n",
		b.rows, b.repeat, float64(b.rows)/m.seconds/1000, m.cpu, mib(m.peakPSS), verdict(mib(m.peakPSS) <= 40), peaksText(m.peaks))
	if big == "" {
		return nil
	}
	os.Remove(filepath.Join(b.out, "run.jsonl"))
	f, err := b.faucetRun(ctx, "csv-jsonl-big", config(big, filepath.Join(b.out, "run-big.jsonl")), bigRows)
	os.Remove(filepath.Join(b.out, "run-big.jsonl"))
	if err != nil {
		return err
	}
	fmt.Printf("faucet run csv → jsonl, %d rows: %.0fk rows/s, CPU %.2f s; peak PSS %.1f MiB; peak RSS per process (MiB): %s\n",
		bigRows, float64(bigRows)/f.seconds/1000, f.cpu, mib(f.peakPSS), peaksText(f.peaks))
	for _, plugin := range []string{"csv", "jsonl"} {
		small, large := m.peaks[plugin], f.peaks[plugin]
		if small <= 0 || large <= 0 {
			return fmt.Errorf("no peak RSS sampled for plugin %s", plugin)
		}
		growth := float64(large)/float64(small) - 1
		fmt.Printf("  plugin %s peak RSS, %d vs %d rows: %.1f vs %.1f MiB, %+.1f%% (within 10%% %s)\n", plugin, bigRows, b.rows, mib(large), mib(small), 100*growth, verdict(growth <= 0.10))
	}
	return nil
}

// measureShards runs CSV → Postgres and Postgres → Postgres whole and
// split into 2 shards, with `faucet run` (--shards 2) and through one
// `faucet serve` outside a cluster (shard: {count: 2}), the four
// interleaved, and prints each way's speedup with the CPU time of faucet's
// process tree and of the database server.
func (b *bench) measureShards(ctx context.Context) error {
	srv, err := b.startServe(ctx)
	if err != nil {
		return err
	}
	defer srv.stop()
	cases := []struct {
		name, source string
		prepare      func(context.Context) error
		table        string
	}{
		{"csv → postgres", fmt.Sprintf("{type: csv, config: {path: %q}}", b.data), b.prepareCSVTable, "bench_csv"},
		{"postgres → postgres", fmt.Sprintf("{type: postgres, config: {url: %q, table: bench_src}}", b.pg), b.prepareCopyTable, "bench_copy"},
	}
	type way struct {
		name   string
		served bool
	}
	ways := []way{{"faucet run", false}, {"faucet serve", true}}
	for _, c := range cases {
		pipeline := fmt.Sprintf("pipeline:\n  source: %s\n  sink: {type: postgres, config: {url: %q, table: %s}}\n", c.source, b.pg, c.table)
		whole, split := map[string][]runFigures{}, map[string][]runFigures{}
		for range b.repeat {
			for _, w := range ways {
				for _, shards := range []int{0, 2} {
					if err := c.prepare(ctx); err != nil {
						return err
					}
					var f runFigures
					var err error
					if w.served {
						config := "version: 1\nname: shards\n"
						if shards > 0 {
							config += fmt.Sprintf("shard: {count: %d}\n", shards)
						}
						f, err = b.serveRun(ctx, srv, config+pipeline, b.rows)
					} else {
						var args []string
						if shards > 0 {
							args = []string{"--shards", fmt.Sprint(shards)}
						}
						base := b.db.children()
						db0 := b.db.cpu(base)
						f, err = b.faucetRun(ctx, "shards", "version: 1\nname: shards\n"+pipeline, b.rows, args...)
						f.db = b.db.cpu(base) - db0
					}
					if err != nil {
						return err
					}
					if shards > 0 {
						split[w.name] = append(split[w.name], f)
					} else {
						whole[w.name] = append(whole[w.name], f)
					}
				}
			}
		}
		for _, w := range ways {
			wm, sm := medianRun(whole[w.name]), medianRun(split[w.name])
			speedup := wm.seconds / sm.seconds
			fmt.Printf("%s %s, %d rows (median of %d): whole %.0fk rows/s, CPU faucet %.2f s + postgres %.2f s; 2 shards %.0fk rows/s, CPU faucet %.2f s + postgres %.2f s; speedup %.2f× (≥ 1.6 %s)\n",
				w.name, c.name, b.rows, b.repeat, float64(b.rows)/wm.seconds/1000, wm.cpu, wm.db, float64(b.rows)/sm.seconds/1000, sm.cpu, sm.db, speedup, verdict(speedup >= 1.6))
			fmt.Printf("  cores busy (CPU s / wall s): whole %.2f, 2 shards %.2f, of %d; CPU by process (s), whole: %s; 2 shards: %s\n",
				(wm.cpu+wm.db)/wm.seconds, (sm.cpu+sm.db)/sm.seconds, runtime.NumCPU(), cpuText(wm.cpuBy), cpuText(sm.cpuBy))
		}
	}
	return nil
}

// cpuText lists the CPU time by process, largest first.
func cpuText(by map[string]float64) string {
	var names []string
	for n := range by {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(by[b], by[a]) })
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, by[n]))
	}
	return strings.Join(parts, ", ")
}
