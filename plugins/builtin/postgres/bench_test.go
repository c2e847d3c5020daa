package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

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
