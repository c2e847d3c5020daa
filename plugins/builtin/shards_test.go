package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// read collects the records a source produces for one read.
func read(t *testing.T, src sdk.Source, config string, shard *sdk.Shard) []string {
	t.Helper()
	var recs []string
	w := sdk.NewBatchWriter(func(b sdk.Batch) error {
		for r := range b.All() {
			recs = append(recs, string(r))
		}
		return nil
	})
	if err := src.Read(context.Background(), sdk.ReadRequest{Config: json.RawMessage(config), Shard: shard}, w); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// assertShardsUnion checks that reading every shard yields exactly the
// records of an unsharded read: in order when ordered, as a multiset
// otherwise (whole files grouped by size).
func assertShardsUnion(t *testing.T, name, config string, counts []int, ordered bool) {
	t.Helper()
	c, ok := builtin.Lookup(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	src := c.(sdk.Source)
	whole := read(t, src, config, nil)
	if len(whole) == 0 {
		t.Fatal("the unsharded read is empty")
	}
	for _, n := range counts {
		shards, err := c.(sdk.Sharder).Shards(context.Background(), json.RawMessage(config), n)
		if err != nil {
			t.Fatalf("shards(%d): %v", n, err)
		}
		if len(shards) == 0 || len(shards) > n {
			t.Fatalf("shards(%d) returned %d shards", n, len(shards))
		}
		var union []string
		for i := range shards {
			union = append(union, read(t, src, config, &shards[i])...)
		}
		want := whole
		if !ordered {
			want = slices.Clone(whole)
			slices.Sort(want)
			slices.Sort(union)
		}
		if !slices.Equal(union, want) {
			t.Errorf("%d shards: union has %d records, the unsharded read %d (or they differ)", n, len(union), len(whole))
		}
	}
}

func TestGenerateShards(t *testing.T) {
	assertShardsUnion(t, "generate", `{"count": 10007, "seed": 7}`, []int{1, 2, 3, 16, 20000}, true)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCSVShardsSplitOneFileAtRecordStarts(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("id,text,more\n")
	// Several MiB, so cuts fall in later read chunks than the first and the
	// quotes of the chunks before them are counted, not walked.
	for i := range 100_000 {
		// Every third row has a quoted field spanning lines, with commas and
		// escaped quotes, so naive newline cuts would split records.
		if i%3 == 0 {
			fmt.Fprintf(&b, "%d,\"line one\nline \"\"two\"\", more\n\",x\n", i)
		} else {
			fmt.Fprintf(&b, "%d,plain %d,y\n", i, i)
		}
	}
	path := filepath.Join(dir, "big.csv")
	write(t, path, b.String())
	assertShardsUnion(t, "csv", fmt.Sprintf(`{"path": %q}`, path), []int{1, 2, 5, 64, 997}, true)
}

func TestCSVShardsByFile(t *testing.T) {
	dir := t.TempDir()
	for f := range 5 {
		var b strings.Builder
		b.WriteString("a;b\n")
		for i := range 10 * (f + 1) {
			fmt.Fprintf(&b, "%d;%d\n", f, i)
		}
		write(t, filepath.Join(dir, fmt.Sprintf("part-%d.csv", f)), b.String())
	}
	assertShardsUnion(t, "csv", fmt.Sprintf(`{"path": %q, "delimiter": ";"}`, filepath.Join(dir, "*.csv")), []int{1, 2, 3, 5, 8}, false)
}

func TestJSONLShards(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "{\"i\": %d, \"s\": \"%s\"}\n", i, strings.Repeat("x", i%37))
	}
	one := filepath.Join(dir, "one", "big.jsonl")
	os.MkdirAll(filepath.Dir(one), 0o755)
	write(t, one, b.String())
	assertShardsUnion(t, "jsonl", fmt.Sprintf(`{"path": %q}`, one), []int{1, 2, 7, 333}, true)

	for f := range 4 {
		write(t, filepath.Join(dir, fmt.Sprintf("f%d.jsonl", f)), strings.Repeat(fmt.Sprintf("{\"f\": %d}\n", f), f+1))
	}
	assertShardsUnion(t, "jsonl", fmt.Sprintf(`{"path": %q}`, filepath.Join(dir, "f*.jsonl")), []int{1, 2, 4, 9}, false)
}
