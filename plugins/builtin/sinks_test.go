package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// session writes the records (JSON objects) to the named sink in one batch
// and ends with commit or abort.
func session(t *testing.T, name, config string, commit bool, records ...string) error {
	t.Helper()
	c, _ := builtin.Lookup(name)
	w, err := c.(sdk.Sink).Open(context.Background(), json.RawMessage(config))
	if err != nil {
		return err
	}
	data := strings.Join(records, "\n") + "\n"
	if err := w.Write(context.Background(), sdk.Batch{Seq: 1, Count: len(records), Records: []byte(data)}); err != nil {
		w.Abort(context.Background())
		return err
	}
	if !commit {
		return w.Abort(context.Background())
	}
	return w.Close(context.Background())
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCSVSink(t *testing.T) {
	dir := t.TempDir()
	recs := []string{
		`{"id":1,"name":"Ada, Countess","note":"said \"hi\"","ok":true,"tags":["a","b"],"none":null}`,
		`{"id":2.5,"name":" lead","note":"two\nlines","ok":false,"tags":[],"none":"x"}`,
	}
	for _, tc := range []struct {
		name, config, want string
	}{
		{"defaults", `{"path": %q}`, "id,name,note,ok,tags,none\n1,\"Ada, Countess\",\"said \"\"hi\"\"\",true,\"[\"\"a\"\",\"\"b\"\"]\",\n2.5,\" lead\",\"two\nlines\",false,[],x\n"},
		{"columns and delimiter", `{"path": %q, "columns": ["name", "id"], "delimiter": ";", "header": false}`, "Ada, Countess;1\n\" lead\";2.5\n"},
		{"quote all", `{"path": %q, "columns": ["id", "ok"], "quoting": "all"}`, "\"id\",\"ok\"\n\"1\",\"true\"\n\"2.5\",\"false\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".csv")
			if err := session(t, "csv", fmt.Sprintf(tc.config, path), true, recs...); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != tc.want {
				t.Errorf("wrote\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	err := session(t, "csv", fmt.Sprintf(`{"path": %q}`, filepath.Join(dir, "x.csv")), true, `{"a":1}`, `{"a":2,"b":3}`)
	if err == nil || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("a record with a new field: %v", err)
	}
}

func TestFileSinkModes(t *testing.T) {
	for _, name := range []string{"csv", "jsonl"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "out")
			cfg := func(mode string) string { return fmt.Sprintf(`{"path": %q, "write_mode": %q}`, path, mode) }
			if err := session(t, name, cfg("overwrite"), true, `{"n":1}`); err != nil {
				t.Fatal(err)
			}
			first := readFile(t, path)
			// An aborted overwrite leaves the old file; an aborted append
			// truncates back; a committed append adds without a second header.
			if err := session(t, name, cfg("overwrite"), false, `{"n":2}`); err != nil {
				t.Fatal(err)
			}
			if err := session(t, name, cfg("append"), false, `{"n":3}`); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); got != first {
				t.Errorf("after aborted sessions: %q, want %q", got, first)
			}
			if err := session(t, name, cfg("append"), true, `{"n":4}`); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"csv": "n\n1\n4\n", "jsonl": "{\"n\":1}\n{\"n\":4}\n"}[name]
			if got := readFile(t, path); got != want {
				t.Errorf("after append: %q, want %q", got, want)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("temporary files left: %v", entries)
			}
		})
	}
}

func TestJSONLSourceRejectsNonObjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(path, []byte("{\"a\":1}\n\n  \n[1,2]\n"), 0o644)
	c, _ := builtin.Lookup("jsonl")
	w := sdk.NewBatchWriter(func(sdk.Batch) error { return nil })
	err := c.(sdk.Source).Read(context.Background(), sdk.ReadRequest{Config: json.RawMessage(fmt.Sprintf(`{"path": %q}`, path))}, w)
	if err == nil || !strings.Contains(err.Error(), "line 4: not a JSON object") {
		t.Errorf("error = %v, want line 4 named", err)
	}
}
