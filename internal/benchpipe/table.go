package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faucet-dev/faucet/pipeline"
)

// pipelineCase is one row of the benchmark table: a pipeline faucet runs
// through plugin processes and in one process, and the reference program
// that does the same job without faucet.
type pipelineCase struct {
	name         string
	source, sink pipeline.ConnectorConfig
	// reference is the command line of the reference (run in a shell).
	reference string
	// prepare runs before each measured run of any side, untimed.
	prepare func(context.Context) error
	// target is the least faucet (plugins) / reference ratio the issue
	// asks for; 0 when it sets none.
	target float64
	// db is set for the cases that use the database server, whose CPU time
	// is then shown.
	db bool
}

// figures are one timed run.
type figures struct {
	seconds float64
	// cpu is the CPU time of the side's processes (faucet's tree, or the
	// reference's); db is the database server's, for the cases that use one.
	cpu, db float64
}

// side is one way of running a case.
type side struct {
	name string
	run  func(ctx context.Context, c pipelineCase) (figures, error)
}

// measureTable runs every case's sides in turn, repeat times, interleaved
// so that load from elsewhere on the machine hits them alike, and prints
// the medians and ratios.
func (b *bench) measureTable(ctx context.Context, cases []pipelineCase) error {
	sides := []side{
		{"plugins", func(ctx context.Context, c pipelineCase) (figures, error) { return b.execute(ctx, c, b.host) }},
		{"in process", func(ctx context.Context, c pipelineCase) (figures, error) { return b.execute(ctx, c, b.local) }},
		{"reference", b.reference},
	}
	runs := make([][][]figures, len(cases))
	for i := range runs {
		runs[i] = make([][]figures, len(sides))
	}
	for range b.repeat {
		for i, c := range cases {
			for j, s := range sides {
				if c.prepare != nil {
					if err := c.prepare(ctx); err != nil {
						return fmt.Errorf("%s: prepare: %w", c.name, err)
					}
				}
				f, err := s.run(ctx, c)
				if err != nil {
					return fmt.Errorf("%s (%s): %w", c.name, s.name, err)
				}
				runs[i][j] = append(runs[i][j], f)
			}
		}
	}
	fmt.Printf("\nrows/s, median of %d interleaved runs of %d rows; CPU is the side's processes' seconds, db the database server's\n", b.repeat, b.rows)
	table := [][]string{{"pipeline", "faucet (plugins)", "faucet in 1 process", "reference", "faucet / reference", "plugins / in process"}}
	for i, c := range cases {
		p, in, ref := median(runs[i][0]), median(runs[i][1]), median(runs[i][2])
		rate := func(f figures) float64 { return float64(b.rows) / f.seconds }
		cell := func(f figures) string {
			s := fmt.Sprintf("%.0fk, CPU %.2f", rate(f)/1000, f.cpu)
			if c.db {
				s += fmt.Sprintf(", db %.2f", f.db)
			}
			return s
		}
		ratio := fmt.Sprintf("%.2f", rate(p)/rate(ref))
		if c.target > 0 {
			ratio += fmt.Sprintf(" (≥ %.2f %s)", c.target, verdict(rate(p)/rate(ref) >= c.target))
		}
		boundary := fmt.Sprintf("%.2f", rate(p)/rate(in))
		if c.name == "CSV → JSONL" {
			boundary += fmt.Sprintf(" (≥ 0.90 %s)", verdict(rate(p)/rate(in) >= 0.90))
		}
		table = append(table, []string{c.name, cell(p), cell(in), cell(ref), ratio, boundary})
	}
	printTable(table)
	for i, c := range cases {
		fmt.Printf("  %s reference: %s\n", c.name, cases[i].reference)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "holds"
	}
	return "misses"
}

// execute runs a case's pipeline through conns and checks that it moved
// every row.
func (b *bench) execute(ctx context.Context, c pipelineCase, conns pipeline.Connectors) (figures, error) {
	base := b.db.children()
	db0 := b.db.cpu(base)
	// The plugin processes are the host's warm ones, alive before and after
	// the run: the CPU time of the tree then and now tells what it took,
	// without a sampler competing with the run.
	cpu0 := treeCPU(os.Getpid())
	start := time.Now()
	res, err := pipeline.Execute(ctx, &pipeline.Plan{
		Invocations: []pipeline.Invocation{{RowID: "bench", Source: c.source, Sink: c.sink}},
		Execution:   pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorStop},
	}, pipeline.ExecuteOptions{Connectors: conns})
	elapsed := time.Since(start).Seconds()
	cpu := treeCPU(os.Getpid()) - cpu0
	if err != nil {
		return figures{}, err
	}
	if res[0].RecordsWritten != b.rows {
		return figures{}, fmt.Errorf("wrote %d rows, want %d", res[0].RecordsWritten, b.rows)
	}
	return figures{seconds: elapsed, cpu: cpu, db: b.db.cpu(base) - db0}, nil
}

// reference runs a case's reference command.
func (b *bench) reference(ctx context.Context, c pipelineCase) (figures, error) {
	base := b.db.children()
	db0 := b.db.cpu(base)
	cmd := exec.CommandContext(ctx, "sh", "-c", c.reference)
	cmd.Env = append(os.Environ(), "PSQL="+b.psql, "URL="+b.pg, "BENCHPIPE="+b.self)
	cmd.Stderr = os.Stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return figures{}, fmt.Errorf("%s: %w", c.reference, err)
	}
	u := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return figures{seconds: elapsed, cpu: u.Seconds(), db: b.db.cpu(base) - db0}, nil
}

// median is the median run by time, with the median CPU times.
func median(runs []figures) figures {
	mid := func(f func(figures) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	sorted := slices.SortedFunc(slices.Values(runs), func(a, b figures) int { return cmp.Compare(a.seconds, b.seconds) })
	m := sorted[len(sorted)/2]
	m.cpu = mid(func(f figures) float64 { return f.cpu })
	m.db = mid(func(f figures) float64 { return f.db })
	return m
}

// printTable prints rows as columns padded to their widest cell.
func printTable(rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("   ")
			}
			line.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
		}
		fmt.Println(strings.TrimRight(line.String(), " "))
	}
}
