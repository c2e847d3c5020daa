package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular/tabulartest"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// benchRows is the size of the benchmark dataset.
const benchRows = 200_000

// benchBatches are the benchmark rows in full-size batches.
func benchBatches() []sdk.Batch {
	var batches []sdk.Batch
	w := sdk.NewBatchWriter(func(b sdk.Batch) error {
		b.Records = bytes.Clone(b.Records)
		batches = append(batches, b)
		return nil
	})
	for id := int64(1); id <= benchRows; id++ {
		_ = w.AppendFunc(func(dst []byte) ([]byte, error) { return generate.AppendRow(dst, 1, id), nil })
	}
	_ = w.Flush()
	return batches
}

// BenchmarkSink writes the dataset through COPY into a new table per run.
func BenchmarkSink(b *testing.B) {
	url := testpg.Database(b)
	batches := benchBatches()
	for i := 0; b.Loop(); i++ {
		config := fmt.Sprintf(`{"url": %q, "table": "t%d"}`, url, i)
		if err := tabulartest.Write(b, Connector{}, config, false, batches...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSinkIsolating writes the dataset as BenchmarkSink does, into
// a table with a primary key, in a session with a record policy (the
// pipeline dead-letters refused records) and 0.1 % of the records refused:
// holding a value their column cannot take, repeating the previous
// record's key, or repeating a key the table holds. It measures the checks
// and the windows the clean path does without.
func BenchmarkSinkIsolating(b *testing.B) {
	url := testpg.Database(b)
	clean := benchBatches()
	spoils := []struct {
		name  string
		spoil func(rec []byte, n int) []byte
	}{
		{"bad values", func(rec []byte, _ int) []byte {
			return bytes.Replace(bytes.Replace(rec, []byte(`"active":true`), []byte(`"active":"maybe"`), 1), []byte(`"active":false`), []byte(`"active":"never"`), 1)
		}},
		{"duplicate keys", func(rec []byte, n int) []byte {
			return bytes.Replace(rec, fmt.Appendf(nil, `{"id":%d,`, n), fmt.Appendf(nil, `{"id":%d,`, n-1), 1)
		}},
		// The table holds these records' keys already: a window is
		// refused at the first of them and its keys judged by the server.
		{"keys in the table", nil},
	}
	for k, sp := range spoils {
		b.Run(sp.name, func(b *testing.B) {
			batches := make([]sdk.Batch, len(clean))
			n := 0
			for i := range clean {
				var spoiled []byte
				for rec := range clean[i].All() {
					if n++; n%1000 == 500 && sp.spoil != nil {
						rec = sp.spoil(rec, n)
					}
					spoiled = append(append(spoiled, rec...), '\n')
				}
				batches[i] = sdk.Batch{Seq: clean[i].Seq, Count: clean[i].Count, Records: spoiled}
			}
			for i := 0; b.Loop(); i++ {
				// The table gets its types from a clean batch.
				table := fmt.Sprintf("iso%d_%d", k, i)
				config := fmt.Sprintf(`{"url": %q, "table": %q}`, url, table)
				if err := tabulartest.Write(b, Connector{}, config, false, clean[:1]...); err != nil {
					b.Fatal(err)
				}
				exec(b, url, "TRUNCATE "+table, "ALTER TABLE "+table+" ADD PRIMARY KEY (id)")
				if sp.spoil == nil {
					exec(b, url, fmt.Sprintf("INSERT INTO %s (id) SELECT g FROM generate_series(500, %d, 1000) g", table, benchRows))
				}
				refused := len(writeRefusing(b, config, batches...))
				if refused != benchRows/1000 {
					b.Fatalf("refused %d records, want %d", refused, benchRows/1000)
				}
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkSource streams the dataset out of a table.
func BenchmarkSource(b *testing.B) {
	url := testpg.Database(b)
	if err := tabulartest.Write(b, Connector{}, fmt.Sprintf(`{"url": %q, "table": "src"}`, url), false, benchBatches()...); err != nil {
		b.Fatal(err)
	}
	config := json.RawMessage(fmt.Sprintf(`{"url": %q, "table": "src"}`, url))
	for b.Loop() {
		w := sdk.NewBatchWriter(func(sdk.Batch) error { return nil })
		if err := (Connector{}).Read(context.Background(), sdk.ReadRequest{Config: config}, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkSinkPolicy writes the clean dataset into a typed table with a
// primary key, in a session without a record policy and in one with, and
// reports the sink's own CPU per run beside the rate: what the checks and
// the windows cost when nothing is refused.
func BenchmarkSinkPolicy(b *testing.B) {
	url := testpg.Database(b)
	batches := benchBatches()
	for _, policy := range []bool{false, true} {
		name := map[bool]string{false: "without a record policy", true: "with a record policy"}[policy]
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			for i := 0; b.Loop(); i++ {
				table := fmt.Sprintf("policy%t_%d", policy, i)
				exec(b, url, "DROP TABLE IF EXISTS "+table, "CREATE TABLE "+table+" (id bigint PRIMARY KEY, first_name text, country text, amount numeric, created_at timestamptz, active boolean, attributes jsonb)")
				config := fmt.Sprintf(`{"url": %q, "table": %q}`, url, table)
				before := processCPU(b)
				if policy {
					if refused := writeRefusing(b, config, batches...); len(refused) != 0 {
						b.Fatalf("refused %d clean records: %v", len(refused), refused[0])
					}
				} else if err := tabulartest.Write(b, Connector{}, config, false, batches...); err != nil {
					b.Fatal(err)
				}
				cpu += processCPU(b) - before
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "sink-cpu-ms/op")
		})
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
