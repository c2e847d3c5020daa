// Command benchpipe measures faucet's data plane. `benchpipe gen` writes the
// deterministic benchmark dataset; `benchpipe run` moves it through faucet's
// pipelines (CSV → JSONL, Postgres → Postgres, CSV → Postgres, Postgres →
// JSONL), through plugin processes and in one process, and through a
// reference program doing the same job without faucet (`benchpipe plain`
// for CSV → JSONL, psql's \copy for the rest), all interleaved in one
// sitting, and prints each figure with the ratios; then, as a user runs
// it, `faucet run`: the memory of the process tree, the plugins' peak
// memory on a ten times larger input, and the speedup of two shards; and
// CSV → Postgres with 0.1 % bad rows dead-lettered against the clean run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
		fmt.Fprintln(os.Stderr, "usage: benchpipe gen|run|plain [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "plain":
		err = plain(os.Args[2:])
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
	return writeDataset(*out, *rows, *seed)
}

// writeDataset writes rows rows of the dataset seed generates to out.
func writeDataset(out string, rows, seed int64) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString("id,first_name,country,amount,created_at,active,attributes\n")
	var line, attrs []byte
	for id := int64(1); id <= rows; id++ {
		r := generate.RowOf(seed, id)
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

// bench is one sitting of measurements.
type bench struct {
	// tmp holds the benchmark's own files, out what the pipelines write.
	faucet, data, tmp, out, self string
	rows                         int64
	repeat                       int
	host                         *host.Host
	local                        *inproc.Connectors
	// pg, psql and db are the database cases' server, client and CPU meter.
	pg, psql string
	db       dbServer
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	faucet := fs.String("faucet", "", "the faucet binary serving the built-in connectors")
	data := fs.String("data", "", "the CSV dataset from benchpipe gen")
	rows := fs.Int64("rows", 1_000_000, "rows in the dataset")
	repeat := fs.Int("repeat", 5, "runs per case and side (three times as many for the dead-letter variants); medians are reported")
	pg := fs.String("pg", "", "a PostgreSQL URL: also measure the Postgres pipelines")
	psql := fs.String("psql", "psql", "the psql of the Postgres references")
	bigRows := fs.Int64("big-rows", 10_000_000, "rows of the larger dataset the plugins' memory is measured on again (0: skip)")
	only := fs.String("only", "", "measure only this group of figures: dead-letters or shards (both need -pg)")
	outDir := fs.String("out", "", "directory the pipelines write their output files to (default: a temporary one); a tmpfs keeps the disk's writeback out of the figures")
	fs.Parse(args)
	if *faucet == "" || *data == "" {
		return fmt.Errorf("run: -faucet and -data are required")
	}
	if *only != "" && ((*only != "dead-letters" && *only != "shards") || *pg == "") {
		return fmt.Errorf("run: -only takes dead-letters or shards, with -pg")
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "benchpipe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if *outDir == "" {
		*outDir = tmp
	}
	b := &bench{faucet: *faucet, data: *data, tmp: tmp, out: *outDir, self: self, rows: *rows, repeat: max(*repeat, 1), pg: *pg, psql: *psql, local: inproc.New(builtin.All()...)}
	var specs []sdk.Spec
	for _, c := range builtin.All() {
		specs = append(specs, c.Spec())
	}
	b.host, err = host.New(ctx, host.Options{Executable: *faucet, Builtins: specs, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	defer b.host.Close()

	out := filepath.Join(b.out, "out.jsonl")
	plainOut := filepath.Join(b.out, "plain.jsonl")
	cases := []pipelineCase{{
		name:      "CSV → JSONL",
		source:    connector("csv", map[string]any{"path": *data}),
		sink:      connector("jsonl", map[string]any{"path": out}),
		reference: fmt.Sprintf(`"$BENCHPIPE" plain %q %q`, *data, plainOut),
		target:    0.92,
	}}
	if *pg != "" {
		if err := b.setupPostgres(ctx); err != nil {
			return err
		}
		switch *only {
		case "dead-letters":
			return b.measureDeadLetters(ctx)
		case "shards":
			return b.measureShards(ctx)
		}
		cases = append(cases, pipelineCase{
			name:      "Postgres → Postgres",
			source:    connector("postgres", map[string]any{"url": *pg, "table": "bench_src"}),
			sink:      connector("postgres", map[string]any{"url": *pg, "table": "bench_copy"}),
			reference: `"$PSQL" "$URL" -qc '\copy bench_src to stdout' | "$PSQL" "$URL" -qc '\copy bench_copy from stdin'`,
			prepare:   b.prepareCopyTable,
			target:    0.85,
			db:        true,
		}, pipelineCase{
			name:      "CSV → Postgres",
			source:    connector("csv", map[string]any{"path": *data}),
			sink:      connector("postgres", map[string]any{"url": *pg, "table": "bench_csv"}),
			reference: fmt.Sprintf(`"$PSQL" "$URL" -qc "\copy bench_csv from '%s' csv header"`, *data),
			prepare:   b.prepareCSVTable,
			target:    0.95,
			db:        true,
		}, pipelineCase{
			name:      "Postgres → JSONL",
			source:    connector("postgres", map[string]any{"url": *pg, "table": "bench_src"}),
			sink:      connector("jsonl", map[string]any{"path": out}),
			reference: fmt.Sprintf(`"$PSQL" "$URL" -qc "\copy (select row_to_json(t) from bench_src t) to '%s'"`, plainOut),
			prepare:   b.checkpoint,
			db:        true,
		})
	}
	if err := b.checkPlain(ctx, cases[0], out, plainOut); err != nil {
		return err
	}
	if err := b.measureTable(ctx, cases); err != nil {
		return err
	}
	os.Remove(out)
	os.Remove(plainOut)

	big := ""
	if *bigRows > 0 {
		big = filepath.Join(tmp, "big.csv")
		if err := writeDataset(big, *bigRows, 1); err != nil {
			return err
		}
		defer os.Remove(big)
	}
	if err := b.measureMemory(ctx, big, *bigRows); err != nil {
		return err
	}
	if *pg != "" {
		if err := b.measureShards(ctx); err != nil {
			return err
		}
		return b.measureDeadLetters(ctx)
	}
	return nil
}

// checkPlain makes sure the CSV → JSONL reference writes exactly what
// faucet writes, so that both are timed doing the same job.
func (b *bench) checkPlain(ctx context.Context, c pipelineCase, out, plainOut string) error {
	if _, err := b.execute(ctx, c, b.local); err != nil {
		return err
	}
	if _, err := b.reference(ctx, c); err != nil {
		return err
	}
	same, err := sameFiles(out, plainOut)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("the plain reference's output %s differs from faucet's %s", plainOut, out)
	}
	return nil
}

// sameFiles reports whether two files hold the same bytes.
func sameFiles(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ra, rb := bufio.NewReaderSize(fa, 1<<20), bufio.NewReaderSize(fb, 1<<20)
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(ra, bufA)
		nb, eb := io.ReadFull(rb, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			return (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF), nil
		}
	}
}

// setupPostgres loads the dataset into bench_src with psql (typed columns,
// the id its primary key, so it shards by id ranges) and finds the server's
// postmaster, when it runs on this machine, to measure its CPU time.
func (b *bench) setupPostgres(ctx context.Context) error {
	err := b.exec(ctx, "DROP TABLE IF EXISTS bench_src",
		"CREATE TABLE bench_src (id bigint PRIMARY KEY, first_name text, country text, amount numeric, created_at timestamptz, active boolean, attributes jsonb)")
	if err != nil {
		return err
	}
	load := exec.CommandContext(ctx, b.psql, b.pg, "-qc", fmt.Sprintf(`\copy bench_src from '%s' csv header`, b.data))
	if out, err := load.CombinedOutput(); err != nil {
		return fmt.Errorf("load bench_src: %w\n%s", err, out)
	}
	if err := b.exec(ctx, "ANALYZE bench_src"); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, b.pg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return err
	}
	if f := statFields(backend); len(f) > 1 {
		b.db.postmaster, _ = strconv.Atoi(f[1])
	} else {
		fmt.Println("the database server runs elsewhere: its CPU time is not measured")
	}
	return nil
}

// exec runs statements on the database.
func (b *bench) exec(ctx context.Context, stmts ...string) error {
	conn, err := pgx.Connect(ctx, b.pg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// checkpoint flushes the previous run's writes before the next, so that no
// run pays for another's checkpoint.
func (b *bench) checkpoint(ctx context.Context) error { return b.exec(ctx, "CHECKPOINT") }

// prepareCopyTable empties the Postgres → Postgres target: bench_src's
// columns, no index.
func (b *bench) prepareCopyTable(ctx context.Context) error {
	return b.exec(ctx, "DROP TABLE IF EXISTS bench_copy", "CREATE TABLE bench_copy (LIKE bench_src)", "CHECKPOINT")
}

// prepareCSVTable empties the CSV → Postgres target, with the columns the
// postgres sink gives a table it creates from the CSV records (their values
// are strings; the timestamps are recognised).
func (b *bench) prepareCSVTable(ctx context.Context) error {
	return b.exec(ctx, "DROP TABLE IF EXISTS bench_csv",
		"CREATE TABLE bench_csv (id text, first_name text, country text, amount text, created_at timestamptz, active text, attributes text)", "CHECKPOINT")
}

func connector(typ string, cfg map[string]any) pipeline.ConnectorConfig {
	data, _ := json.Marshal(cfg)
	return pipeline.ConnectorConfig{Type: typ, Config: data}
}
