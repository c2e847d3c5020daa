package sdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain ascii text", `quote " and backslash \`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f",
		"ünïcödé and 日本語", "invalid \xff\xfe utf-8", "line sep \u2028 para \u2029",
		strings.Repeat("abcdefgh", 5) + "\"" + strings.Repeat("x", 9), "ends with a quote\"",
		"\x80", "8 bytes!" + "é", "<html>&amp;</html>",
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		// encoding/json escapes <, > and & for HTML; both forms are valid JSON
		// for the same string, so compare decoded values as well as validity.
		got := sdk.AppendString(nil, s)
		var back, wantBack string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("AppendString(%q) = %s: invalid JSON: %v", s, got, err)
			continue
		}
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("AppendString(%q) decodes to %q, encoding/json's to %q", s, back, wantBack)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello \"world\"\n")
	f.Add("\xff\u2028")
	f.Fuzz(func(t *testing.T, s string) {
		got := sdk.AppendString([]byte("prefix"), s)
		var back string
		if err := json.Unmarshal(got[len("prefix"):], &back); err != nil {
			t.Fatalf("invalid JSON for %q: %s", s, got)
		}
		var want string
		ref, _ := json.Marshal(s)
		json.Unmarshal(ref, &want)
		if back != want {
			t.Fatalf("%q round-trips to %q, want %q", s, back, want)
		}
	})
}
