package host_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// pipelineRows is the size of the pipeline tests' dataset: several batches,
// so shards and COPYs span more than one.
const pipelineRows = 20_000

// writeDatasetCSV writes rows 1..n of the generate dataset as CSV, the
// attributes object as JSON text, and returns each row as its CSV fields.
func writeDatasetCSV(t *testing.T, path string, n int) [][]string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	rows := [][]string{{"id", "first_name", "country", "amount", "created_at", "active", "attributes"}}
	for id := int64(1); id <= int64(n); id++ {
		r := generate.RowOf(1, id)
		rows = append(rows, []string{strconv.FormatInt(id, 10), r.FirstName, r.Country, r.Amount(), r.CreatedAt.Format(time.RFC3339), strconv.FormatBool(r.Active), string(r.AppendAttributes(nil))})
	}
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return rows[1:]
}

// execute runs one invocation, split into shards when shards > 1, and
// checks that every invocation succeeded and that together they wrote n
// records. A sink whose sessions do not commit and abort on their own (a
// file) must refuse the shards and run whole.
func execute(t *testing.T, h *host.Host, inv pipeline.Invocation, shards int, n int64) {
	t.Helper()
	p := plan(inv)
	if shards > 1 {
		split, err := pipeline.SplitShards(context.Background(), p, shards, h)
		apart := h.IndependentSessions(inv.Sink.Type)
		switch {
		case err != nil:
			t.Fatalf("split %s → %s into %d shards: %v", inv.Source.Type, inv.Sink.Type, shards, err)
		case apart && (split.Note != "" || len(split.Plan.Invocations) != shards):
			t.Fatalf("split %s → %s into %d shards: %d invocations, note %q", inv.Source.Type, inv.Sink.Type, shards, len(split.Plan.Invocations), split.Note)
		case !apart && (split.Plan != p || !strings.Contains(split.Note, "does not commit and abort concurrent sessions on their own")):
			t.Fatalf("%s → %s with %d shards: note %q, want the run whole", inv.Source.Type, inv.Sink.Type, shards, split.Note)
		}
		p = split.Plan
	}
	results, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h})
	if err != nil {
		t.Fatalf("%s → %s: %v", inv.Source.Type, inv.Sink.Type, err)
	}
	var sum int64
	for _, r := range results {
		sum += r.RecordsWritten
	}
	if sum != n {
		t.Fatalf("%s → %s wrote %d records, want %d", inv.Source.Type, inv.Sink.Type, sum, n)
	}
}

// query returns the rows of a query on the test database, every column as
// text, timestamps in UTC.
func query(t *testing.T, url, sql string) [][]string {
	t.Helper()
	ctx := context.Background()
	config, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	config.RuntimeParams["timezone"] = "UTC"
	conn, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
		row := make([]string, len(r.RawValues()))
		for i, v := range r.RawValues() {
			row[i] = string(v)
		}
		return row, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// byID sorts decoded records by their id field.
func byID(recs []map[string]any) []map[string]any {
	id := func(m map[string]any) float64 {
		switch v := m["id"].(type) {
		case float64:
			return v
		case string:
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
		return 0
	}
	slices.SortFunc(recs, func(a, b map[string]any) int { return int(id(a) - id(b)) })
	return recs
}

// generatedRecords is rows from..to of the generate dataset, decoded.
func generatedRecords(t *testing.T, from, to int64) []map[string]any {
	t.Helper()
	var out []map[string]any
	for id := from; id <= to; id++ {
		var m map[string]any
		if err := json.Unmarshal(generate.AppendRow(nil, 1, id), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestPipelinesMoveEveryRecordOnce runs the benchmark's pipelines through
// plugin processes, whole and split into two shards run in parallel (the
// ones into postgres; jsonl refuses shards and runs whole), and compares
// what each sink holds with its source, record for record.
func TestPipelinesMoveEveryRecordOnce(t *testing.T) {
	url := testpg.Database(t)
	h := newHost(t)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "data.csv")
	csvRows := writeDatasetCSV(t, csvPath, pipelineRows)
	var fromCSV []map[string]any
	for _, r := range csvRows {
		fromCSV = append(fromCSV, map[string]any{"id": r[0], "first_name": r[1], "country": r[2], "amount": r[3], "created_at": r[4], "active": r[5], "attributes": r[6]})
	}
	generated := generatedRecords(t, 1, pipelineRows)
	execute(t, h, pipeline.Invocation{RowID: "load",
		Source: cfg("generate", map[string]any{"count": pipelineRows}),
		Sink:   cfg("postgres", map[string]any{"url": url, "table": "src", "key": []string{"id"}})}, 1, pipelineRows)

	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			out := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", name, shards)) }
			table := func(name string) string { return fmt.Sprintf("%s_%d", name, shards) }
			jsonl := func(name string) pipeline.ConnectorConfig {
				return cfg("jsonl", map[string]any{"path": out(name)})
			}
			pg := func(name string) pipeline.ConnectorConfig {
				return cfg("postgres", map[string]any{"url": url, "table": table(name)})
			}
			csvSource := cfg("csv", map[string]any{"path": csvPath})
			pgSource := cfg("postgres", map[string]any{"url": url, "table": "src"})

			execute(t, h, pipeline.Invocation{RowID: "csv-jsonl", Source: csvSource, Sink: jsonl("csv")}, shards, pipelineRows)
			if got := byID(readJSONL(t, out("csv"))); !reflect.DeepEqual(got, fromCSV) {
				t.Errorf("csv → jsonl: %d records differ from the CSV's %d", len(got), len(fromCSV))
			}

			execute(t, h, pipeline.Invocation{RowID: "csv-postgres", Source: csvSource, Sink: pg("csv")}, shards, pipelineRows)
			got := query(t, url, fmt.Sprintf(`SELECT id, first_name, country, amount, to_char(created_at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), active, attributes FROM %s ORDER BY id::bigint`, table("csv")))
			if !reflect.DeepEqual(got, csvRows) {
				t.Errorf("csv → postgres: %d rows differ from the CSV's %d", len(got), len(csvRows))
			}

			execute(t, h, pipeline.Invocation{RowID: "postgres-postgres", Source: pgSource, Sink: pg("copy")}, shards, pipelineRows)
			diff := query(t, url, fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s),
				(SELECT count(*) FROM (SELECT * FROM src EXCEPT ALL SELECT * FROM %[1]s) missing),
				(SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM src) extra)`, table("copy")))
			if want := []string{strconv.Itoa(pipelineRows), "0", "0"}; !slices.Equal(diff[0], want) {
				t.Errorf("postgres → postgres: rows, missing, extra = %v, want %v", diff[0], want)
			}

			execute(t, h, pipeline.Invocation{RowID: "postgres-jsonl", Source: pgSource, Sink: jsonl("pg")}, shards, pipelineRows)
			if got := byID(readJSONL(t, out("pg"))); !reflect.DeepEqual(got, generated) {
				t.Errorf("postgres → jsonl: %d records differ from the table's %d", len(got), len(generated))
			}
		})
	}
}

// heldEnv makes the test binary serve the held connector as a plugin.
const heldEnv = "FAUCET_HOST_TEST_HELD_PLUGIN"

// held is a source of the generate dataset's rows 1..rows that, once it has
// sent the first hold_after of them, waits for the file release to exist
// (or for the read to be cancelled) before it sends the rest.
type held struct{}

type heldConfig struct {
	Rows      int64  `json:"rows"`
	HoldAfter int64  `json:"hold_after"`
	Release   string `json:"release"`
}

func (held) Spec() sdk.Spec {
	return sdk.Spec{Name: "held", Version: "0.0.1", SourceSchema: json.RawMessage(`{"type": "object"}`)}
}

func (held) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	var cfg heldConfig
	if err := sdk.DecodeConfig(req.Config, &cfg); err != nil {
		return err
	}
	for id := int64(1); id <= cfg.Rows; id++ {
		if err := w.AppendFunc(func(dst []byte) ([]byte, error) { return generate.AppendRow(dst, 1, id), nil }); err != nil {
			return err
		}
		if id != cfg.HoldAfter {
			continue
		}
		if err := w.Flush(); err != nil {
			return err
		}
		for {
			if _, err := os.Stat(cfg.Release); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// TestPostgresSinkFailureMidCopy kills the sink's connection while its COPY
// holds acknowledged batches, and cancels another run mid-COPY. The killed
// attempt commits nothing and the retry writes every record once; the
// cancelled run commits exactly the batches its sink acknowledged.
func TestPostgresSinkFailureMidCopy(t *testing.T) {
	url := testpg.Database(t)
	hostLog, logged := testLog(t)
	h, err := host.New(context.Background(), host.Options{Executable: faucetBin, Builtins: builtinSpecs(), Logger: hostLog, PluginDirs: []string{installSelf(t, "held", heldEnv)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Close()
		assertNoChildren(t)
	})
	const holdAfter = 12_000

	t.Run("connection killed, then retried", func(t *testing.T) {
		release := filepath.Join(t.TempDir(), "release")
		p := plan(pipeline.Invocation{RowID: "default",
			Source: cfg("held", heldConfig{Rows: pipelineRows, HoldAfter: holdAfter, Release: release}),
			Sink:   cfg("postgres", map[string]any{"url": url, "table": "killed"})})
		p.Retry = pipeline.Retry{MaxAttempts: 2}
		var once sync.Once
		res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h, Logger: hostLog, Progress: func(pipeline.Progress) {
			once.Do(func() {
				testpg.KillCopy(t, url)
				if err := os.WriteFile(release, nil, 0o644); err != nil {
					t.Error(err)
				}
			})
		}})
		if err != nil || res[0].RecordsWritten != pipelineRows {
			t.Fatalf("result %+v, %v: want the retry to write all %d records", res[0], err, pipelineRows)
		}
		if !strings.Contains(logged.String(), "invocation failed, retrying") {
			t.Fatal("the first attempt did not fail: the kill came too late to test anything")
		}
		got := query(t, url, "SELECT row_to_json(k)::text FROM killed k ORDER BY id")
		recs := make([]map[string]any, len(got))
		for i, r := range got {
			if err := json.Unmarshal([]byte(r[0]), &recs[i]); err != nil {
				t.Fatal(err)
			}
			recs[i]["created_at"] = strings.TrimSuffix(recs[i]["created_at"].(string), "+00:00") + "Z"
		}
		if !reflect.DeepEqual(recs, generatedRecords(t, 1, pipelineRows)) {
			t.Fatalf("the table holds %d rows that are not the %d records, each once", len(recs), pipelineRows)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		p := plan(pipeline.Invocation{RowID: "default",
			Source: cfg("held", heldConfig{Rows: pipelineRows, HoldAfter: holdAfter, Release: filepath.Join(t.TempDir(), "never")}),
			Sink:   cfg("postgres", map[string]any{"url": url, "table": "cancelled"})})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res, err := pipeline.Execute(ctx, p, pipeline.ExecuteOptions{Connectors: h, Progress: func(pr pipeline.Progress) {
			if pr.RowRecords == holdAfter {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) || res[0].RecordsWritten != holdAfter {
			t.Fatalf("result %+v, %v: want a cancelled run that committed the %d acknowledged records", res[0], err, holdAfter)
		}
		got := query(t, url, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM cancelled")
		if want := []string{strconv.Itoa(holdAfter), strconv.Itoa(holdAfter), "1", strconv.Itoa(holdAfter)}; !slices.Equal(got[0], want) {
			t.Fatalf("count, distinct ids, min, max = %v, want %v", got[0], want)
		}
	})
}
