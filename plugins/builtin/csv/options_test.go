package csv

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// TestSourceOptions reads files with each source option set and checks the
// records: the delimiter (an ASCII and a multi-byte one), header: false with
// and without columns, columns renaming a header, and lazy_quotes.
func TestSourceOptions(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		config     map[string]any
		want       string // JSON Lines, or "error"
	}{
		{"semicolon", "a;b\n1;2\n", map[string]any{"delimiter": ";"}, `{"a":"1","b":"2"}` + "\n"},
		{"multi-byte delimiter", "a¦b\n\"x¦y\"¦2\n", map[string]any{"delimiter": "¦"}, `{"a":"x¦y","b":"2"}` + "\n"},
		{"no header", "1,2\n3,4\n", map[string]any{"header": false}, `{"column_1":"1","column_2":"2"}` + "\n" + `{"column_1":"3","column_2":"4"}` + "\n"},
		{"no header, columns", "1,2\n", map[string]any{"header": false, "columns": []string{"id", "n"}}, `{"id":"1","n":"2"}` + "\n"},
		{"columns rename the header", "a,b\n1,2\n", map[string]any{"columns": []string{"id", "n"}}, `{"id":"1","n":"2"}` + "\n"},
		{"bare quote refused", "a,b\n1,x\"y\n", map[string]any{}, "error"},
		{"lazy quotes", "a,b\n1,x\"y\n", map[string]any{"lazy_quotes": true}, `{"a":"1","b":"x\"y"}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.csv")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.config["path"] = path
			raw, err := json.Marshal(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := sdk.NewBatchWriter(func(b sdk.Batch) error { out.Write(b.Records); return nil })
			err = Connector{}.Read(context.Background(), sdk.ReadRequest{Config: raw}, w)
			if err == nil {
				err = w.Flush()
			}
			got := out.String()
			if err != nil {
				got = "error"
			}
			if got != tc.want {
				t.Errorf("read %q with %s:\ngot  %s\nwant %s (error: %v)", tc.text, raw, got, tc.want, err)
			}
		})
	}
}
