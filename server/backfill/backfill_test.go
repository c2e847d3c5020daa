package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const config = `version: 1
name: orders
pipeline:
  source: {type: csv, config: {path: "in-${backfill.start_date}.csv"}}
  sink: {type: jsonl, config: {path: "out-${backfill.unit}-${now:%H}.jsonl", note: "$${backfill.start} stays"}}
`

func ptr[T any](v T) *T { return &v }

func TestPlan(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	day, _ := ParseWindow("1d")
	// 2026-03-08 is the spring-forward day in New York: its unit is 23
	// hours, and the next starts at midnight again.
	from, _ := ParseBoundary("2026-03-07", ny)
	to, _ := ParseBoundary("2026-03-10", ny)
	units, err := Plan(from, to, &day, ny)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ id, start, end string }{
		{"20260307T050000Z", "2026-03-07T00:00:00-05:00", "2026-03-08T00:00:00-05:00"},
		{"20260308T050000Z", "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"},
		{"20260309T040000Z", "2026-03-09T00:00:00-04:00", "2026-03-10T00:00:00-04:00"},
	}
	if len(units) != len(want) {
		t.Fatalf("%d units: %+v", len(units), units)
	}
	for i, w := range want {
		u := units[i]
		if u.ID != w.id || u.Start.Format(time.RFC3339) != w.start || u.End.Format(time.RFC3339) != w.end {
			t.Errorf("unit %d: %s %s %s, want %+v", i, u.ID, u.Start.Format(time.RFC3339), u.End.Format(time.RFC3339), w)
		}
	}

	hours, _ := ParseWindow("7h")
	from, _ = ParseBoundary("2026-06-01T00:00:00Z", time.UTC)
	to, _ = ParseBoundary("2026-06-02T00:00:00Z", time.UTC)
	units, _ = Plan(from, to, &hours, time.UTC)
	if len(units) != 4 || !units[3].End.Equal(to) || units[3].End.Sub(units[3].Start) != 3*time.Hour {
		t.Errorf("7h units of a day: %+v, want 4, the last cut at the end", units)
	}
	whole, _ := Plan(from, to, nil, time.UTC)
	if len(whole) != 1 || !whole[0].Start.Equal(from) || !whole[0].End.Equal(to) {
		t.Errorf("no window: %+v, want one unit", whole)
	}
}

func TestHash(t *testing.T) {
	// The FNV-1a test vectors.
	for in, want := range map[string]string{"": "cbf29ce484222325", "a": "af63dc4c8601ec8c", "foobar": "85944171f73967e8"} {
		if got := Hash(in); got != want {
			t.Errorf("Hash(%q) = %s, want %s", in, got, want)
		}
	}
	day, _ := ParseWindow("1d")
	six, _ := ParseWindow("6h")
	from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	if got := Descriptor(from, to, &day, "orders"); got != "time|2026-06-01T00:00:00+00:00|2026-07-01T00:00:00+00:00|1d|orders" {
		t.Errorf("descriptor %s", got)
	}
	if got := Descriptor(from, to, &six, "orders"); !strings.HasSuffix(got, "|21600|orders") {
		t.Errorf("a fixed window is written in seconds: %s", got)
	}
	if got := Descriptor(from, to, nil, "orders"); !strings.HasSuffix(got, "|whole|orders") {
		t.Errorf("no window: %s", got)
	}
}

func TestPrepare(t *testing.T) {
	b, err := Prepare(Request{
		Config: config, From: "2026-06-01", To: "2026-06-03", Window: ptr("1d"), Timezone: ptr("Europe/Berlin"),
		Labels: map[string]string{"team": "data"}, TimeoutSecs: ptr(int64(60)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Runs) != 2 || len(b.Hash) != 16 {
		t.Fatalf("%d runs, hash %q", len(b.Runs), b.Hash)
	}
	r := b.Runs[1]
	if r.Name != "orders-backfill-20260601T220000Z" || r.IdempotencyKey != "backfill:"+b.Hash+":20260601T220000Z" || r.Clock != "2026-06-02T00:00:00+02:00" {
		t.Errorf("run %+v", r)
	}
	if r.Labels["backfill"] != b.Hash || r.Labels["backfill_unit"] != "20260601T220000Z" || r.Labels["team"] != "data" || *r.TimeoutSecs != 60 {
		t.Errorf("labels %v", r.Labels)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.Config), &doc); err != nil {
		t.Fatal(err)
	}
	src := doc["pipeline"].(map[string]any)["source"].(map[string]any)["config"].(map[string]any)
	sink := doc["pipeline"].(map[string]any)["sink"].(map[string]any)["config"].(map[string]any)
	if src["path"] != "in-2026-06-02.csv" || sink["path"] != "out-20260601T220000Z-${now:%H}.jsonl" || sink["note"] != "$${backfill.start} stays" {
		t.Errorf("rendered source %v sink %v", src, sink)
	}
	if doc["name"] != r.Name || doc["delivery"] != "at_least_once" {
		t.Errorf("name %v delivery %v", doc["name"], doc["delivery"])
	}
	again, _ := Prepare(Request{Config: config, From: "2026-06-01", To: "2026-06-03", Window: ptr("1d"), Timezone: ptr("Europe/Berlin")})
	if again.Hash != b.Hash {
		t.Error("the same range hashes differently")
	}
	other, _ := Prepare(Request{Config: config, From: "2026-06-01", To: "2026-06-04", Window: ptr("1d"), Timezone: ptr("Europe/Berlin")})
	if other.Hash == b.Hash {
		t.Error("another range hashes the same")
	}
}

func TestPrepareRefuses(t *testing.T) {
	unscoped := strings.Replace(config, "in-${backfill.start_date}.csv", "in.csv", 1)
	matrix := unscoped + "matrix:\n  - {id: a, source: {config: {path: \"a-${now.date}.csv\"}}}\n  - {id: b}\n"
	cases := []struct {
		name string
		req  Request
		msg  string
	}{
		{"end before start", Request{Config: config, From: "2026-06-02", To: "2026-06-01"}, "must be before to"},
		{"empty range", Request{Config: config, From: "2026-06-01", To: "2026-06-01"}, "must be before to"},
		{"100,000 units", Request{Config: config, From: "2026-01-01T00:00:00Z", To: "2026-03-12T10:40:00Z", Window: ptr("1m")}, "more than 10000 units"},
		{"bad window", Request{Config: config, From: "2026-06-01", To: "2026-06-02", Window: ptr("1y")}, `window "1y" is not a duration`},
		{"zero window", Request{Config: config, From: "2026-06-01", To: "2026-06-02", Window: ptr("0h")}, "must be positive"},
		{"bad from", Request{Config: config, From: "June", To: "2026-06-02"}, `from: "June" is not RFC 3339`},
		{"bad zone", Request{Config: config, From: "2026-06-01", To: "2026-06-02", Timezone: ptr("Mars/Olympus")}, "not an IANA time zone"},
		{"unknown token", Request{Config: strings.Replace(config, "${backfill.unit}", "${backfill.begin}", 1), From: "2026-06-01", To: "2026-06-02"}, "pipeline.sink.config.path: unknown token ${backfill.begin}"},
		{"unscoped", Request{Config: unscoped, From: "2026-06-01", To: "2026-06-02"}, "pipeline.source never use"},
		{"unscoped row", Request{Config: matrix, From: "2026-06-01", To: "2026-06-02"}, "the source of matrix[1] never use"},
	}
	for _, c := range cases {
		_, err := Prepare(c.req)
		var be *Error
		if !errors.As(err, &be) || !strings.Contains(be.Msg, c.msg) {
			t.Errorf("%s: %v, want …%s…", c.name, err, c.msg)
		}
	}
	if _, err := Prepare(Request{Config: "pipeline: [", From: "2026-06-01", To: "2026-06-02"}); err == nil {
		t.Error("a config that does not parse was planned")
	}
}

func TestSubmitStopsAtARefusal(t *testing.T) {
	b, err := Prepare(Request{Config: config, From: "2026-06-01", To: "2026-06-05", Window: ptr("1d")})
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("the run queue is full")
	var calls int
	res, err := b.Submit(context.Background(), func(_ context.Context, r Run) (Accepted, error) {
		calls++
		if calls == 3 {
			return Accepted{}, full
		}
		return Accepted{RunID: "run-" + r.Name, Status: "queued", Replayed: calls == 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || res.Submitted() != 2 || len(res.Units) != 4 {
		t.Fatalf("%d calls, %d submitted of %d", calls, res.Submitted(), len(res.Units))
	}
	if !res.Units[0].Run.Replayed || res.Units[1].Run.Replayed || res.Units[2].Error != full.Error() || !strings.Contains(res.Units[3].Error, "not submitted") {
		t.Errorf("units %+v", res.Units)
	}
	if _, err := b.Submit(context.Background(), func(context.Context, Run) (Accepted, error) { return Accepted{}, full }); !errors.Is(err, full) {
		t.Errorf("a refused first unit: %v", err)
	}
}
