package snapshot

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

func plan(secret, path string, rows ...string) *pipeline.Plan {
	p := &pipeline.Plan{
		Execution: pipeline.Execution{MaxConcurrent: 1, OnError: pipeline.OnErrorContinue}, Delivery: "at_least_once",
		Retry:   pipeline.Retry{MaxAttempts: 3, InitialBackoff: time.Second, MaxBackoff: 30 * time.Second},
		Secrets: []string{secret},
	}
	for _, id := range rows {
		p.Invocations = append(p.Invocations, pipeline.Invocation{
			RowID:         id,
			Source:        pipeline.ConnectorConfig{Type: "postgres", Config: json.RawMessage(`{"url":"postgres://u:` + secret + `@h/db","table":"people","n":10000000}`)},
			Sink:          pipeline.ConnectorConfig{Type: "jsonl", Config: json.RawMessage(`{"path":"` + path + `"}`)},
			SinkWriteMode: "overwrite",
		})
	}
	return p
}

func TestSnapshotsHoldNoSecret(t *testing.T) {
	salt := NewSalt()
	doc := Of(plan("hunter2", "out.jsonl", "default"), "people", salt)
	raw := doc.Marshal()
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Fatalf("the snapshot holds the secret: %s", raw)
	}
	back, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if url := back.Rows["default"].Source.Config["url"].(string); !strings.HasPrefix(url, "postgres://u:<secret:") {
		t.Errorf("url %q: want the password fingerprinted in place", url)
	}
	if d := Compare(&back, Of(plan("hunter2", "out.jsonl", "default"), "people", salt)); !d.Equal {
		t.Errorf("the same config differs from its snapshot: %+v", d.Changes)
	}
	// Another salt fingerprints differently: the secret is not the thing
	// compared, its salted fingerprint is.
	if d := Compare(&back, Of(plan("hunter2", "out.jsonl", "default"), "people", NewSalt())); d.Equal {
		t.Error("fingerprints under another salt compare equal")
	}
}

func TestCompareNamesEveryChange(t *testing.T) {
	salt := NewSalt()
	prev := Of(plan("old-pw", "out.jsonl", "default", "eu"), "people", salt)
	cur := Of(plan("new-pw", "out2.jsonl", "default", "us"), "people", salt)
	cur.Settings.OnError = "stop"
	cur.Rows["default"].Sink.Config["mode"] = "0600"
	cur.Rows["default"].Source.Config["n"] = json.Number("10000001")
	delete(cur.Rows["default"].Source.Config, "table")
	d := Compare(&prev, cur)
	if d.Equal {
		t.Fatal("different configs compare equal")
	}
	var out bytes.Buffer
	if err := d.Render(&out, "run r1"); err != nil {
		t.Fatal(err)
	}
	want := `pipeline people: 8 change(s) against run r1
  ~ setting on_error: "continue" -> "stop"
  + row default: sink.config.mode: "0600"
  ~ row default: sink.config.path: "out.jsonl" -> "out2.jsonl"
  ~ row default: source.config.n: 10000000 -> 10000001
  - row default: source.config.table: "people"
  ~ row default: source.config.url: (a secret changed)
  - row eu: postgres → jsonl
  + row us: postgres → jsonl
`
	if got := out.String(); got != want {
		t.Errorf("render:\n%s\nwant:\n%s", got, want)
	}
	cur.Rows["default"].Source.Config["url"] = "postgres://u:" + fingerprintPrefix + "0123>@other/db"
	out.Reset()
	if err := Compare(&prev, cur).Render(&out, "run r1"); err != nil || !strings.Contains(out.String(), `source.config.url: "postgres://u:<secret>@h/db" -> "postgres://u:<secret>@other/db"`) {
		t.Errorf("a changed URL around a secret: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "old-pw") || strings.Contains(out.String(), fingerprintPrefix) {
		t.Errorf("the render shows a secret or its fingerprint:\n%s", out.String())
	}
	first := Compare(nil, cur)
	if first.Equal || len(first.Changes) < 3 || first.Changes[len(first.Changes)-1].Kind != Added {
		t.Errorf("against no snapshot: %+v", first)
	}
}

// TestKeyTellsEveryChangeOfTheSnapshot: a plan that differs in anything Of
// reads has another key, and an equal plan the same one.
func TestKeyTellsEveryChangeOfTheSnapshot(t *testing.T) {
	base := Key(plan("pw", "/out.jsonl", "a", "b"), "people")
	if again := Key(plan("pw", "/out.jsonl", "a", "b"), "people"); again != base {
		t.Fatalf("equal plans: %s and %s", base, again)
	}
	changes := map[string]func(p *pipeline.Plan) string{
		"name":            func(p *pipeline.Plan) string { return "others" },
		"max concurrent":  func(p *pipeline.Plan) string { p.Execution.MaxConcurrent = 2; return "people" },
		"on error":        func(p *pipeline.Plan) string { p.Execution.OnError = pipeline.OnErrorStop; return "people" },
		"delivery":        func(p *pipeline.Plan) string { p.Delivery = "at_most_once"; return "people" },
		"retry attempts":  func(p *pipeline.Plan) string { p.Retry.MaxAttempts = 4; return "people" },
		"initial backoff": func(p *pipeline.Plan) string { p.Retry.InitialBackoff = 2 * time.Second; return "people" },
		"max backoff":     func(p *pipeline.Plan) string { p.Retry.MaxBackoff = time.Minute; return "people" },
		"shards":          func(p *pipeline.Plan) string { p.Shard = &pipeline.Shard{Count: 1}; return "people" },
		"secret":          func(p *pipeline.Plan) string { p.Secrets = []string{"other"}; return "people" },
		"row id":          func(p *pipeline.Plan) string { p.Invocations[1].RowID = "c"; return "people" },
		"source type":     func(p *pipeline.Plan) string { p.Invocations[0].Source.Type = "sqlite"; return "people" },
		"source config":   func(p *pipeline.Plan) string { p.Invocations[0].Source.Config = json.RawMessage(`{}`); return "people" },
		"sink type":       func(p *pipeline.Plan) string { p.Invocations[1].Sink.Type = "csv"; return "people" },
		"sink config":     func(p *pipeline.Plan) string { p.Invocations[1].Sink.Config = json.RawMessage(`{}`); return "people" },
		"write mode":      func(p *pipeline.Plan) string { p.Invocations[0].SinkWriteMode = "append"; return "people" },
		"rows":            func(p *pipeline.Plan) string { p.Invocations = p.Invocations[:1]; return "people" },
		// Parts that run together must not make the same key.
		"parts moved": func(p *pipeline.Plan) string {
			p.Invocations[0].RowID, p.Invocations[0].Source.Type = "apostgres", ""
			return "people"
		},
	}
	for what, change := range changes {
		p := plan("pw", "/out.jsonl", "a", "b")
		name := change(p)
		if Key(p, name) == base {
			t.Errorf("a changed %s keeps the key", what)
		}
	}
}
