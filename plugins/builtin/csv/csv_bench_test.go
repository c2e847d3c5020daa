package csv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/plugins/builtin/csv"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// BenchmarkRead measures the csv source alone on the benchmark dataset
// shape (100,000 rows per op).
func BenchmarkRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "data.csv")
	cmd := exec.Command("go", "run", "../../../internal/benchpipe", "gen", "-rows", "100000", "-out", path)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("gen: %v\n%s", err, out)
	}
	fi, _ := os.Stat(path)
	config := json.RawMessage(fmt.Sprintf(`{"path": %q}`, path))
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for b.Loop() {
		n := 0
		w := sdk.NewBatchWriter(func(bt sdk.Batch) error { n += bt.Count; return nil })
		if err := (csv.Connector{}).Read(context.Background(), sdk.ReadRequest{Config: config}, w); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if n != 100000 {
			b.Fatalf("read %d rows", n)
		}
	}
	b.ReportMetric(float64(b.N)*100000/b.Elapsed().Seconds(), "rows/s")
}
