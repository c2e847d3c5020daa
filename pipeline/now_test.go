package pipeline

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone below on hosts without a zone database: the test never depends on the host
)

func TestNowReferences(t *testing.T) {
	// 2026-03-08 14:05:09 at +01:00, a Sunday, the 67th day of the year.
	clock := time.Date(2026, 3, 8, 14, 5, 9, 0, time.FixedZone("", 3600))
	r := &resolver{env: noEnv, secret: func(string) {}, now: clock}
	utc := &resolver{env: noEnv, secret: func(string) {}, now: time.Date(2026, 3, 8, 14, 5, 9, 5e8, time.UTC)}
	if got, err := utc.expand("${now}"); err != nil || got != "2026-03-08T14:05:09.500+00:00" {
		t.Errorf("${now} in UTC with a fraction = %q, %v", got, err)
	}
	cases := []struct{ in, want string }{
		{"${now}", "2026-03-08T14:05:09+01:00"},
		{"${now.iso}", "2026-03-08T14:05:09+01:00"},
		{"${now.datetime}", "2026-03-08T14:05:09+01:00"},
		{"${now.date}", "2026-03-08"},
		{"${now.year}/${now.month}/${now.day}", "2026/03/08"},
		{"${now.hour}:${now.minute}:${now.second}", "14:05:09"},
		{"${now.unix}", "1772975109"},
		{"s3://b/dt=${now.date}/part.jsonl", "s3://b/dt=2026-03-08/part.jsonl"},
		{"${now:%Y-%m-%d}", "2026-03-08"},
		{"${now.strftime.%Y/%m/%d}", "2026/03/08"},
		{"${now:%y%j %H%M%S %I%p}", "26067 140509 02PM"},
		{"${now:%a %A %b %B %e %u %w}", "Sun Sunday Mar March  8 7 0"},
		{"${now:%F %T %D %R}", "2026-03-08 14:05:09 03/08/26 14:05"},
		{"${now:%z %:z %s %C %%}", "+0100 +01:00 1772975109 20 %"},
		{"${now-1d}", "2026-03-07T14:05:09+01:00"},
		{"${now+6h.hour}", "20"},
		{"${now-1d.date}", "2026-03-07"},
		{"${now-1w:%Y%m%d}", "20260301"},
		{"${now-1d+30m-15s}", "2026-03-07T14:34:54+01:00"},
		{"${now+90s.minute}", "06"},
		{"$${now} is ${now.date}", "${now} is 2026-03-08"},
	}
	for _, tc := range cases {
		got, err := r.expand(tc.in)
		if err != nil {
			t.Errorf("expand(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	bad := []struct{ in, msg string }{
		{"${now.bogus}", `unknown field "bogus"`},
		{"${now.dat}", `did you mean "date"?`},
		{"${now:%Q}", "%Q is not a strftime conversion"},
		{"${now:%Y%}", "lone %"},
		{"${now:}", "the format is empty"},
		{"${now-1}", "the offset has no unit"},
		{"${now-d}", "an offset needs a number"},
		{"${now-1y}", `unknown unit 'y'`},
		{"${now-12345678d}", "too large"},
		{"${now-1dx}", `.FIELD or :FORMAT, not "x"`},
		{"${nowadays}", `unknown reference "${nowadays}"`},
	}
	for _, tc := range bad {
		if _, err := r.expand(tc.in); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("expand(%q) error = %v, want one containing %q", tc.in, err, tc.msg)
		}
	}
}

// A calendar day keeps the wall clock across a daylight saving change; an
// hour is an hour.
func TestNowOffsetsAcrossDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatalf("load America/New_York: %v", err)
	}
	clock := time.Date(2026, 3, 8, 12, 0, 0, 0, ny) // the day clocks spring forward
	r := &resolver{env: noEnv, secret: func(string) {}, now: clock}
	for in, want := range map[string]string{
		"${now-1d}":  "2026-03-07T12:00:00-05:00",
		"${now-24h}": "2026-03-07T11:00:00-05:00",
	} {
		if got, err := r.expand(in); err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestLoadRendersTheClock(t *testing.T) {
	src := `version: 1
vars: {day: "${now.date}"}
pipeline:
  source: {type: csv, config: {path: "in-${vars.day}.csv"}}
  sink: {type: jsonl, config: {path: "out-${now-1d:%Y%m%d}.jsonl"}}
`
	clock := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	plan, err := Load([]byte(src), LoadOptions{Catalog: catalog, Env: noEnv, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	inv := plan.Invocations[0]
	if got := string(inv.Source.Config); !strings.Contains(got, `"in-2026-06-01.csv"`) {
		t.Errorf("source config %s", got)
	}
	if got := string(inv.Sink.Config); !strings.Contains(got, `"out-20260531.jsonl"`) {
		t.Errorf("sink config %s", got)
	}
	again, err := Load([]byte(src), LoadOptions{Catalog: catalog, Env: noEnv, Now: clock.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if again.Fingerprint != plan.Fingerprint {
		t.Error("the clock changed the config's fingerprint")
	}

	_, err = Load([]byte(strings.Replace(src, "${now.date}", "${now.dte}", 1)), LoadOptions{Catalog: catalog, Env: noEnv})
	if err == nil || !strings.Contains(err.Error(), "vars.day") || !strings.Contains(err.Error(), `did you mean "date"?`) {
		t.Errorf("a misspelt field: %v, want its path and a suggestion", err)
	}
}
