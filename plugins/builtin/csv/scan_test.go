package csv

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/files"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// both reads text through the fast scanner and through encoding/csv and
// returns the two outputs (records or error text).
func both(t testing.TB, text string, header bool) (fast, std string) {
	path := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sourceConfig{Path: path, Header: &header}
	run := func(read func(r *os.File, w *sdk.BatchWriter) error) string {
		var out bytes.Buffer
		w := sdk.NewBatchWriter(func(b sdk.Batch) error { out.Write(b.Records); return nil })
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		err = read(f, w)
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			return "error"
		}
		return out.String()
	}
	fast = run(func(_ *os.File, w *sdk.BatchWriter) error {
		return readPart(context.Background(), sdk.FilesFrom(context.Background()), cfg, ',', files.Part{File: path}, w)
	})
	std = run(func(f *os.File, w *sdk.BatchWriter) error {
		return readStd(context.Background(), sdk.FilesFrom(context.Background()), cfg, ',', files.Part{File: path}, f, w)
	})
	return fast, std
}

func TestScannerMatchesEncodingCSV(t *testing.T) {
	for _, text := range []string{
		"a,b\n1,2\n",
		"a,b\r\n1,2\r\n3,4",
		"a,b\n\n1,2\n\n\n3,4\n",
		"a,b\n\"x,y\",\"he said \"\"hi\"\"\"\n",
		"a,b\n\"multi\nline\",\"crlf\r\ninside\"\n",
		"a,b,c\n1,,\n,,\n",
		"a,b\n1,2,3\n",
		"a,b\n1\n",
		"a,b\n1,x\"y\n",
		"a,b\n\"open,2\n",
		"a,b\n\"x\"y,2\n",
		"a,b\n\"\",\"\"\n",
		"a,b\n ü ,\t\x01\n",
		"dup,dup\n1,2\n",
		"\"quoted header\",plain\n1,2\n",
		"a\n" + strings.Repeat("x", 3<<20) + "\n",
	} {
		fast, std := both(t, text, true)
		if fast != std {
			t.Errorf("%q:\nscanner      %q\nencoding/csv %q", text, fast, std)
		}
	}
}

func TestScannerNamesColumnsWithoutHeader(t *testing.T) {
	fast, std := both(t, "1,2\n3,4\n", false)
	want := `{"column_1":"1","column_2":"2"}` + "\n" + `{"column_1":"3","column_2":"4"}` + "\n"
	if fast != want || std != want {
		t.Errorf("scanner %q, encoding/csv %q, want %q", fast, std, want)
	}
}

func FuzzScannerMatchesEncodingCSV(f *testing.F) {
	f.Add("a,b\n\"x\"\"y\",2\n")
	f.Add("a,b\r\n\"1\n2\",3\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		fast, std := both(t, text, true)
		if fast != std {
			t.Fatalf("%q:\nscanner      %q\nencoding/csv %q", text, fast, std)
		}
		if fast != "error" {
			for _, line := range strings.Split(strings.TrimSuffix(fast, "\n"), "\n") {
				if line != "" && !json.Valid([]byte(line)) {
					t.Fatalf("invalid JSON record %q", line)
				}
			}
		}
	})
}
