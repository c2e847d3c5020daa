package sdk_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// collect returns a BatchWriter and the batches it emits (copied, since
// the writer reuses its buffer).
func collect() (*sdk.BatchWriter, *[]sdk.Batch) {
	var out []sdk.Batch
	w := sdk.NewBatchWriter(func(b sdk.Batch) error {
		b.Records = bytes.Clone(b.Records)
		out = append(out, b)
		return nil
	})
	return w, &out
}

func TestBatchWriterCutsByCountAndBytes(t *testing.T) {
	w, out := collect()
	for i := range sdk.MaxBatchRecords + 10 {
		if err := w.Append(map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	big := `{"s":"` + strings.Repeat("x", sdk.TargetBatchBytes/3) + `"}`
	for range 4 {
		if err := w.AppendRaw([]byte(big)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var counts []int
	total := 0
	for i, b := range *out {
		counts = append(counts, b.Count)
		total += b.Count
		if b.Seq != uint64(i+1) {
			t.Errorf("batch %d has seq %d", i, b.Seq)
		}
		if n := bytes.Count(b.Records, []byte{'\n'}); n != b.Count {
			t.Errorf("batch %d: count %d but %d lines", i, b.Count, n)
		}
		if len(b.Records) > sdk.TargetBatchBytes+len(big)+1 {
			t.Errorf("batch %d is %d bytes", i, len(b.Records))
		}
	}
	if counts[0] != sdk.MaxBatchRecords || total != sdk.MaxBatchRecords+14 || w.Records() != int64(total) {
		t.Errorf("batch counts %v (records %d)", counts, w.Records())
	}
	if len(counts) < 3 {
		t.Errorf("large records were not cut by bytes: %v", counts)
	}
}

func TestBatchWriterRejects(t *testing.T) {
	w, out := collect()
	huge := make([]byte, sdk.MaxRecordBytes+10)
	copy(huge, `{"s":"`)
	for i := 6; i < len(huge)-2; i++ {
		huge[i] = 'x'
	}
	copy(huge[len(huge)-2:], `"}`)
	w.Append(map[string]int{"ok": 1})
	err := w.AppendRaw(huge)
	if !errors.Is(err, sdk.ErrRecordTooLarge) || !strings.Contains(err.Error(), "record 2 is") {
		t.Errorf("huge record: %v", err)
	}
	for _, bad := range []string{`[1,2]`, `"text"`, ``, `{"a":`} {
		if err := w.AppendRaw([]byte(bad)); err == nil {
			t.Errorf("AppendRaw(%q) accepted", bad)
		}
	}
	if err := w.AppendFunc(func(dst []byte) ([]byte, error) { return append(dst, "{\"a\":\n1}"...), nil }); err == nil {
		t.Error("AppendFunc accepted a record spread over two lines")
	}
	// Rejected records leave no trace; an object over several lines is
	// compacted by AppendRaw.
	if err := w.AppendRaw([]byte("{\n  \"b\": 2\n}\n")); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if len(*out) != 1 || string((*out)[0].Records) != "{\"ok\":1}\n{\"b\":2}\n" {
		t.Errorf("batches = %+v", *out)
	}
}

func TestBatchAllAndFields(t *testing.T) {
	b := sdk.Batch{Count: 2, Records: []byte(`{"z":1,"a":{"x":[1,2]},"m":"s"}` + "\n" + `{"only":null}` + "\n")}
	var keys [][]string
	for rec := range b.All() {
		fields, err := sdk.Fields(rec)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, f := range fields {
			ks = append(ks, fmt.Sprintf("%s=%s", f.Key, f.Value))
		}
		keys = append(keys, ks)
	}
	want := [][]string{{"z=1", `a={"x":[1,2]}`, `m="s"`}, {"only=null"}}
	if !slices.EqualFunc(keys, want, slices.Equal) {
		t.Errorf("fields = %v, want %v (in record order)", keys, want)
	}
	for _, bad := range []string{`[1]`, `{"a":1} x`, `{"a"`} {
		if _, err := sdk.Fields([]byte(bad)); err == nil {
			t.Errorf("Fields(%q) accepted", bad)
		}
	}
}
