package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

// deadLetterEvery is how often a bad row comes in the dead-letter
// datasets: one in a thousand, 0.1 %.
const deadLetterEvery = 1000

// measureDeadLetters times CSV → Postgres into a typed table with a
// primary key three ways, interleaved: the clean dataset without a
// dead-letter queue (today's path), and with the queue, the dataset with
// 0.1 % of its rows holding a value their column cannot take ("n/a" for an
// amount), and again with 0.1 % of its rows repeating the previous row's
// key, which only the server can refuse. It prints each rate and its ratio
// to the clean run's, with the range of each variant's runs.
//
// Each variant runs three times the repeat count: the database server's
// CPU for the same COPY varies by a quarter from one run to the next on a
// small shared machine, and the ratio of two such medians needs more runs
// than a figure read alone to settle within its 10 % bound.
func (b *bench) measureDeadLetters(ctx context.Context) error {
	bad, dup := filepath.Join(b.tmp, "bad.csv"), filepath.Join(b.tmp, "dup.csv")
	if err := spoil(b.data, bad, func(f []string) { f[3] = "n/a" }); err != nil {
		return err
	}
	if err := spoil(b.data, dup, func(f []string) { f[0] = previous(f[0]) }); err != nil {
		return err
	}
	defer os.Remove(bad)
	defer os.Remove(dup)
	sink := connector("postgres", map[string]any{"url": b.pg, "table": "bench_dlq"})
	dlq := filepath.Join(b.out, "dead.jsonl")
	type variant struct {
		name string
		data string
		dl   *pipeline.DeadLetter
	}
	variants := []variant{
		{"clean, no dead-letter queue", b.data, nil},
		{"0.1 % bad values dead-lettered", bad, &pipeline.DeadLetter{Path: dlq, MaxRowAttempts: 2, Action: pipeline.PoisonDLQ}},
		{"0.1 % duplicate keys dead-lettered", dup, &pipeline.DeadLetter{Path: dlq, MaxRowAttempts: 2, Action: pipeline.PoisonDLQ}},
	}
	runs := make([][]figures, len(variants))
	// Each round starts one variant later, so that every variant takes
	// every place in the cycle and none always follows the same one.
	rounds := 3 * b.repeat
	for r := range rounds {
		for k := range variants {
			i := (k + r) % len(variants)
			v := variants[i]
			if err := b.exec(ctx, "DROP TABLE IF EXISTS bench_dlq",
				"CREATE TABLE bench_dlq (id bigint PRIMARY KEY, first_name text, country text, amount numeric, created_at timestamptz, active boolean, attributes jsonb)",
				"CHECKPOINT"); err != nil {
				return err
			}
			os.Remove(dlq)
			base := b.db.children()
			db0 := b.db.cpu(base)
			cpu0 := treeCPU(os.Getpid())
			start := time.Now()
			res, err := pipeline.Execute(ctx, &pipeline.Plan{
				Invocations: []pipeline.Invocation{{RowID: "bench", Source: connector("csv", map[string]any{"path": v.data}), Sink: sink}},
				Execution:   pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorStop},
				DeadLetter:  v.dl,
			}, pipeline.ExecuteOptions{Connectors: b.host})
			elapsed := time.Since(start).Seconds()
			if err != nil {
				return fmt.Errorf("dead letters, %s: %w", v.name, err)
			}
			wantBad := int64(0)
			if v.dl != nil {
				wantBad = b.rows / deadLetterEvery
			}
			if res[0].RecordsWritten != b.rows-wantBad || res[0].RecordsDeadLettered != wantBad {
				return fmt.Errorf("dead letters, %s: wrote %d and dead-lettered %d rows, want %d and %d",
					v.name, res[0].RecordsWritten, res[0].RecordsDeadLettered, b.rows-wantBad, wantBad)
			}
			runs[i] = append(runs[i], figures{seconds: elapsed, cpu: treeCPU(os.Getpid()) - cpu0, db: b.db.cpu(base) - db0})
		}
	}
	os.Remove(dlq)
	clean := median(runs[0])
	fmt.Printf("\nCSV → Postgres into a typed table with a primary key, %d rows (median of %d interleaved runs, and their range):\n", b.rows, rounds)
	rate := func(run figures) float64 { return float64(b.rows) / run.seconds / 1000 }
	bySeconds := func(x, y figures) int { return cmp.Compare(x.seconds, y.seconds) }
	for i, v := range variants {
		f := median(runs[i])
		fastest, slowest := slices.MinFunc(runs[i], bySeconds), slices.MaxFunc(runs[i], bySeconds)
		line := fmt.Sprintf("  %-36s %6.0fk rows/s (%.0fk–%.0fk), CPU %.2f, db %.2f", v.name, rate(f), rate(slowest), rate(fastest), f.cpu, f.db)
		if i > 0 {
			ratio := clean.seconds / f.seconds
			line += fmt.Sprintf("; / clean %.2f (≥ 0.90 %s)", ratio, verdict(ratio >= 0.9))
		}
		fmt.Println(line)
	}
	return nil
}

// spoil copies the dataset from in to out with every deadLetterEvery-th
// row's fields changed by change (the id, name, country and amount fields
// come first; the rest of the line is left as it is).
func spoil(in, out string, change func(fields []string)) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(dst, 1<<20)
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		if n > 0 && n%deadLetterEvery == deadLetterEvery/2 {
			f := strings.SplitN(line, ",", 5)
			change(f)
			line = strings.Join(f, ",")
		}
		w.WriteString(line)
		w.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return dst.Close()
}

// previous is the id before a decimal id.
func previous(id string) string {
	var n int64
	fmt.Sscan(id, &n)
	return fmt.Sprint(n - 1)
}
