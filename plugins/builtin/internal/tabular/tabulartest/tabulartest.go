// Package tabulartest drives SDK sources and sinks directly, in process, for
// the SQL connectors' tests: write sessions, reads, and shard unions.
package tabulartest

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Batch builds a batch from JSON object records.
func Batch(seq uint64, records ...string) sdk.Batch {
	var buf []byte
	for _, r := range records {
		buf = append(append(buf, r...), '\n')
	}
	return sdk.Batch{Seq: seq, Count: len(records), Records: buf}
}

// Write runs one write session of sink with config: every batch, then Close,
// or Abort when abort is set or a batch fails (as faucet does).
func Write(t testing.TB, sink sdk.Sink, config string, abort bool, batches ...sdk.Batch) error {
	t.Helper()
	ctx := context.Background()
	w, err := sink.Open(ctx, json.RawMessage(config))
	if err != nil {
		return err
	}
	for _, b := range batches {
		if err := w.Write(ctx, b); err != nil {
			if aerr := w.Abort(ctx); aerr != nil {
				t.Fatalf("abort after a failed write: %v", aerr)
			}
			return err
		}
	}
	if abort {
		return w.Abort(ctx)
	}
	return w.Close(ctx)
}

// Read runs one Read of source and returns the records it produced.
func Read(t testing.TB, source sdk.Source, config string, shard *sdk.Shard) ([]string, error) {
	t.Helper()
	var out []string
	w := sdk.NewBatchWriter(func(b sdk.Batch) error {
		for rec := range b.All() {
			out = append(out, string(rec))
		}
		return nil
	})
	if err := source.Read(context.Background(), sdk.ReadRequest{Config: json.RawMessage(config), Shard: shard}, w); err != nil {
		return nil, err
	}
	return out, w.Flush()
}

// MustRead is Read failing the test on error.
func MustRead(t testing.TB, source sdk.Source, config string) []string {
	t.Helper()
	recs, err := Read(t, source, config, nil)
	if err != nil {
		t.Fatalf("read %s: %v", config, err)
	}
	return recs
}

// Connector is a source that can also be sharded.
type Connector interface {
	sdk.Source
	sdk.Sharder
}

// ShardUnion splits config into count shards, reads each, and returns all
// their records sorted, with the shards.
func ShardUnion(t testing.TB, c Connector, config string, count int) ([]string, []sdk.Shard) {
	t.Helper()
	shards, err := c.Shards(context.Background(), json.RawMessage(config), count)
	if err != nil {
		t.Fatalf("Shards(%d): %v", count, err)
	}
	var all []string
	for i := range shards {
		recs, err := Read(t, c, config, &shards[i])
		if err != nil {
			t.Fatalf("read shard %s: %v", shards[i].Descriptor, err)
		}
		all = append(all, recs...)
	}
	sort.Strings(all)
	return all, shards
}

// CheckShards asserts that for every count the shards of config together
// hold exactly the records of an unsharded read, and estimate their number.
func CheckShards(t testing.TB, c Connector, config string, counts ...int) {
	t.Helper()
	full := MustRead(t, c, config)
	sort.Strings(full)
	for _, count := range counts {
		union, shards := ShardUnion(t, c, config, count)
		if len(union) != len(full) {
			t.Errorf("%s: %d shards hold %d records, the full read %d", config, count, len(union), len(full))
		} else {
			for i := range union {
				if union[i] != full[i] {
					t.Errorf("%s: %d shards differ from the full read at %q / %q", config, count, union[i], full[i])
					break
				}
			}
		}
		var est int64
		for _, s := range shards {
			est += s.EstimatedRecords
		}
		if est != int64(len(full)) {
			t.Errorf("%s: %d shards estimate %d records, want %d", config, count, est, len(full))
		}
	}
}

// Decoded parses records into generic values (numbers as float64), for
// comparisons that ignore number spelling and key order.
func Decoded(t testing.TB, recs []string) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(recs))
	for i, r := range recs {
		if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
			t.Fatalf("record %d %q: %v", i, r, err)
		}
	}
	return out
}
