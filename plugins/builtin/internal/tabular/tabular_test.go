package tabular

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	rec := ` { "a" : 1, "b\"q": "x\\y\"}", "n": {"k": [1, {"z": "]}"}]}, "e": [], "t": true, "nil":null,"f":-1.5e3 } `
	var got []string
	err := Fields([]byte(rec), func(k, v []byte) error {
		key, err := Key(k)
		if err != nil {
			return err
		}
		got = append(got, key+"="+string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`a=1`, `b"q="x\\y\"}"`, `n={"k": [1, {"z": "]}"}]}`, `e=[]`, `t=true`, `nil=null`, `f=-1.5e3`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if err := Fields([]byte(`{}`), func(k, v []byte) error { return fmt.Errorf("called") }); err != nil {
		t.Errorf("empty object: %v", err)
	}
}

// FuzzFields checks that no input, however broken, makes Fields panic or
// hand out a slice outside the record, and that valid objects split into
// exactly their members.
func FuzzFields(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":"\"","b":[{}]}`, `{"a":`, `{"a" 1}`, `[1]`, `{"a":"x}`, `{"a":{"b":[}`, `{,}`, `{"a":1,}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rec string) {
		var keys []string
		err := Fields([]byte(rec), func(k, v []byte) error {
			key, kerr := Key(k)
			if kerr != nil {
				return kerr
			}
			keys = append(keys, key)
			return nil
		})
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(rec), &m) != nil || m == nil {
			return
		}
		if err != nil {
			t.Fatalf("valid object %q: %v", rec, err)
		}
		distinct := map[string]bool{}
		for _, k := range keys {
			distinct[k] = true
		}
		if len(distinct) != len(m) {
			t.Fatalf("%q: keys %q, want those of %v", rec, keys, m)
		}
	})
}

func TestKindsAndInference(t *testing.T) {
	for raw, want := range map[string]Kind{`null`: KindNull, `true`: KindBool, `12`: KindInteger, `-1.5`: KindNumber, `1e3`: KindNumber, `"s"`: KindString, `{}`: KindJSON, `[1]`: KindJSON} {
		if got := KindOf([]byte(raw)); got != want {
			t.Errorf("KindOf(%s) = %v, want %v", raw, got, want)
		}
	}
	recs := []string{
		`{"i": 1, "n": 1, "t": "2024-01-01T00:00:00Z", "s": "2024-01-01T00:00:00Z", "mix": true, "o": {"a": 1}, "z": null}`,
		`{"i": 2, "n": 1.5, "t": null, "s": "later", "mix": 1, "o": [1]}`,
	}
	cols, err := InferColumns(slices.Values(toBytes(recs)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Column{{"i", KindInteger}, {"n", KindNumber}, {"t", KindTime}, {"s", KindString}, {"mix", KindString}, {"o", KindJSON}, {"z", KindString}}
	if !reflect.DeepEqual(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func TestKeyRangeWhere(t *testing.T) {
	ph := func(n int) string { return fmt.Sprintf("$%d", n) }
	cases := []struct {
		r    KeyRange
		cond string
		args []any
	}{
		{KeyRange{}, "", nil},
		{KeyRange{Through: json.RawMessage(`10`), Nulls: true}, `("id" IS NULL OR ("id" <= $1))`, []any{int64(10)}},
		{KeyRange{After: json.RawMessage(`10`), Through: json.RawMessage(`"x"`)}, `"id" > $1 AND "id" <= $2`, []any{int64(10), "x"}},
		{KeyRange{After: json.RawMessage(`1.5`)}, `"id" > $1`, []any{1.5}},
	}
	for _, tc := range cases {
		cond, args, err := tc.r.Where(QuoteIdent("id"), ph, BoundValue)
		if err != nil || cond != tc.cond || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("%+v: %q %v %v, want %q %v", tc.r, cond, args, err, tc.cond, tc.args)
		}
	}
	shards, err := RangeShards([]json.RawMessage{json.RawMessage(`5`), json.RawMessage(`9`)}, []int64{5, 4, 3})
	if err != nil || len(shards) != 3 {
		t.Fatalf("RangeShards: %v %v", shards, err)
	}
	var descs []string
	for _, s := range shards {
		descs = append(descs, string(s.Descriptor))
	}
	if got := strings.Join(descs, " "); got != `{"through":5,"nulls":true} {"after":5,"through":9} {"after":9}` {
		t.Errorf("descriptors %s", got)
	}
}

func TestQuoting(t *testing.T) {
	if got := QuoteTable(`s.we"ird`); got != `"s"."we""ird"` {
		t.Errorf("QuoteTable = %s", got)
	}
	if got := UpsertSet([]string{"k", "a", "b"}, []string{"k"}); got != `"a" = excluded."a", "b" = excluded."b"` {
		t.Errorf("UpsertSet = %s", got)
	}
}
