// Command benchpipe measures faucet's pipeline throughput. `benchpipe gen`
// writes the deterministic benchmark dataset; `benchpipe run` moves it
// through real plugin processes and through the same connector code in one
// process, and prints rows/s, the cost of the process boundary, and the peak
// resident memory of all faucet processes together.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/inproc"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchpipe gen|run [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchpipe:", err)
		os.Exit(1)
	}
}

// gen writes the benchmark dataset as CSV: the generate connector's rows,
// with the nested attributes object as a JSON text column.
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	rows := fs.Int64("rows", 1_000_000, "rows to write")
	seed := fs.Int64("seed", 1, "dataset seed")
	out := fs.String("out", "", "output CSV file")
	fs.Parse(args)
	if *out == "" {
		return fmt.Errorf("gen: -out is required")
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("id,first_name,country,amount,created_at,active,attributes\n")
	var line, attrs []byte
	for id := int64(1); id <= *rows; id++ {
		r := generate.RowOf(*seed, id)
		line = strconv.AppendInt(line[:0], r.ID, 10)
		line = append(line, ',')
		line = append(line, r.FirstName...)
		line = append(line, ',')
		line = append(line, r.Country...)
		line = append(line, ',')
		line = append(line, r.Amount()...)
		line = append(line, ',')
		line = r.CreatedAt.AppendFormat(line, time.RFC3339)
		line = append(line, ',')
		line = strconv.AppendBool(line, r.Active)
		line = append(line, ',', '"')
		attrs = r.AppendAttributes(attrs[:0])
		line = append(line, strings.ReplaceAll(string(attrs), `"`, `""`)...)
		line = append(line, '"', '\n')
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// benchCase is one pipeline to measure. Add cases here (and their data
// preparation in the script) to extend the benchmark.
type benchCase struct {
	name         string
	source, sink pipeline.ConnectorConfig
	// inProcess also runs the case in one process, to price the boundary.
	inProcess bool
	// prepare, if set, runs before each measured run, untimed.
	prepare func(context.Context) error
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	faucet := fs.String("faucet", "", "the faucet binary serving the built-in connectors")
	data := fs.String("data", "", "the CSV dataset from benchpipe gen")
	rows := fs.Int64("rows", 1_000_000, "rows in the dataset")
	repeat := fs.Int("repeat", 5, "runs per case; the median is reported")
	pg := fs.String("pg", "", "a PostgreSQL URL: also measure generate→postgres (COPY) and postgres→postgres")
	fs.Parse(args)
	if *faucet == "" || *data == "" {
		return fmt.Errorf("run: -faucet and -data are required")
	}
	tmp, err := os.MkdirTemp("", "benchpipe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	cases := []benchCase{{
		name:      "csv→jsonl",
		source:    connector("csv", map[string]any{"path": *data}),
		sink:      connector("jsonl", map[string]any{"path": filepath.Join(tmp, "out.jsonl")}),
		inProcess: true,
	}}
	if *pg != "" {
		cases = append(cases, postgresCases(*pg, *rows)...)
	}

	var specs []sdk.Spec
	for _, c := range builtin.All() {
		specs = append(specs, c.Spec())
	}
	h, err := host.New(context.Background(), host.Options{Executable: *faucet, Builtins: specs, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	defer h.Close()
	local := inproc.New(builtin.All()...)

	fmt.Printf("%-28s %12s %9s %9s %12s\n", "pipeline (1 invocation)", "rows/s", "seconds", "CPU s", "peak RSS")
	for _, c := range cases {
		// With an in-process twin, runs alternate between the two, so load
		// from elsewhere on the machine hits both alike.
		sides := []pipeline.Connectors{h}
		if c.inProcess {
			sides = append(sides, local, relayOnly{h})
		}
		runs := make([][]figures, len(sides))
		for range max(*repeat, 1) {
			for i, conns := range sides {
				f, err := once(c, conns, *rows)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				runs[i] = append(runs[i], f)
			}
		}
		out := median(runs[0])
		fmt.Printf("%-28s %12.0f %9.3f %9.3f %8.1f MiB\n", c.name+" (plugins)", out.rate, out.seconds, out.cpu, out.rssMiB)
		if !c.inProcess {
			continue
		}
		in, relayed := median(runs[1]), median(runs[2])
		fmt.Printf("%-28s %12.0f %9.3f %9.3f %8.1f MiB\n", c.name+" (in process)", in.rate, in.seconds, in.cpu, in.rssMiB)
		fmt.Printf("%-28s %12.0f %9.3f %9.3f %8.1f MiB\n", c.name+" (plugins, relayed)", relayed.rate, relayed.seconds, relayed.cpu, relayed.rssMiB)
		fmt.Printf("%-28s %11.1f%% of rows/s, %.1f%% more CPU time\n", c.name+" boundary cost", 100*(1-out.rate/in.rate), 100*(out.cpu/in.cpu-1))
	}
	return nil
}

// postgresCases load the dataset's rows from the generate connector into a
// new table through COPY, then copy that table into another one: each run
// starts by dropping its sink table, so the sink creates it and appends.
func postgresCases(url string, rows int64) []benchCase {
	drop := func(table string) func(context.Context) error {
		return func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
			return err
		}
	}
	return []benchCase{{
		name:    "generate→postgres",
		source:  connector("generate", map[string]any{"count": rows}),
		sink:    connector("postgres", map[string]any{"url": url, "table": "bench_generated"}),
		prepare: drop("bench_generated"),
	}, {
		name:    "postgres→postgres",
		source:  connector("postgres", map[string]any{"url": url, "table": "bench_generated"}),
		sink:    connector("postgres", map[string]any{"url": url, "table": "bench_copy"}),
		prepare: drop("bench_copy"),
	}}
}

// relayOnly hides the host's Piper: the executor relays every batch through
// its own process, as it does for sinks that cannot read upstream.
type relayOnly struct{ pipeline.Connectors }

func connector(typ string, cfg map[string]any) pipeline.ConnectorConfig {
	data, _ := json.Marshal(cfg)
	return pipeline.ConnectorConfig{Type: typ, Config: data}
}

type figures struct {
	rate, seconds, rssMiB float64
	// cpu is the CPU time (user+system) all faucet processes spent, which
	// stays meaningful when other work competes for the machine.
	cpu float64
}

// once runs a case and measures it.
func once(c benchCase, conns pipeline.Connectors, rows int64) (figures, error) {
	if c.prepare != nil {
		if err := c.prepare(context.Background()); err != nil {
			return figures{}, fmt.Errorf("prepare: %w", err)
		}
	}
	// Return the previous run's heap, so peak memory is this run's alone.
	debug.FreeOSMemory()
	sampler := startRSS()
	cpu0 := treeCPU(os.Getpid())
	start := time.Now()
	res, err := pipeline.Execute(context.Background(), &pipeline.Plan{
		Invocations: []pipeline.Invocation{{RowID: "bench", Source: c.source, Sink: c.sink}},
		Execution:   pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorStop},
	}, pipeline.ExecuteOptions{Connectors: conns})
	elapsed := time.Since(start).Seconds()
	cpu := treeCPU(os.Getpid()) - cpu0
	peak := sampler.stop()
	if err != nil {
		return figures{}, err
	}
	if res[0].RecordsWritten != rows {
		return figures{}, fmt.Errorf("wrote %d rows, want %d", res[0].RecordsWritten, rows)
	}
	return figures{rate: float64(rows) / elapsed, seconds: elapsed, rssMiB: float64(peak) / (1 << 20), cpu: cpu}, nil
}

// median is the median run by time and CPU, with the largest peak memory
// of all runs.
func median(runs []figures) figures {
	slices.SortFunc(runs, func(a, b figures) int { return cmp.Compare(a.seconds, b.seconds) })
	med := runs[len(runs)/2]
	cpus := make([]float64, len(runs))
	for i, r := range runs {
		med.rssMiB = max(med.rssMiB, r.rssMiB)
		cpus[i] = r.cpu
	}
	slices.Sort(cpus)
	med.cpu = cpus[len(cpus)/2]
	return med
}

// rssSampler polls the resident memory of this process and all its
// descendants (the plugin processes) and keeps the largest sum.
type rssSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	peak int64
}

func startRSS() *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			s.peak = max(s.peak, treeRSS(os.Getpid()))
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	})
	return s
}

func (s *rssSampler) stop() int64 {
	close(s.done)
	s.wg.Wait()
	return s.peak
}

// treeCPU sums the user and system CPU seconds of root and its descendants.
func treeCPU(root int) float64 {
	var ticks int64
	for _, pid := range tree(root) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// After the parenthesised command: state is field 3, utime 14, stime 15.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return float64(ticks) / 100
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

// treeRSS sums VmRSS over root and its descendants.
func treeRSS(root int) int64 {
	var total int64
	for _, pid := range tree(root) {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}
