package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular/tabulartest"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// benchBatches are 50,000 generated rows in full-size batches.
func benchBatches() ([]sdk.Batch, int) {
	var batches []sdk.Batch
	rows := 0
	w := sdk.NewBatchWriter(func(b sdk.Batch) error {
		b.Records = bytes.Clone(b.Records)
		batches = append(batches, b)
		rows += b.Count
		return nil
	})
	for id := int64(1); id <= 50_000; id++ {
		_ = w.AppendFunc(func(dst []byte) ([]byte, error) { return generate.AppendRow(dst, 1, id), nil })
	}
	_ = w.Flush()
	return batches, rows
}

func BenchmarkSink(b *testing.B) {
	batches, rows := benchBatches()
	for _, mode := range []string{"append", "upsert"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			for i := 0; b.Loop(); i++ {
				config := fmt.Sprintf(`{"path": %q, "table": "t", "write_mode": %q, "key": ["id"]}`, filepath.Join(dir, fmt.Sprint(i, ".db")), mode)
				if err := tabulartest.Write(b, Connector{}, config, false, batches...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkSource(b *testing.B) {
	batches, rows := benchBatches()
	path := filepath.Join(b.TempDir(), "src.db")
	if err := tabulartest.Write(b, Connector{}, fmt.Sprintf(`{"path": %q, "table": "t"}`, path), false, batches...); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	config := json.RawMessage(fmt.Sprintf(`{"path": %q, "table": "t"}`, path))
	for b.Loop() {
		bw := sdk.NewBatchWriter(func(sdk.Batch) error { return nil })
		if err := (Connector{}).Read(ctx, sdk.ReadRequest{Config: config}, bw); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
