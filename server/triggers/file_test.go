package triggers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

const pipelineYAML = "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}}\n  sink: {type: jsonl, config: {path: \"/tmp/${trigger.name}.jsonl\"}}\n"

// writeFiles writes files (name → contents) into a fresh directory and
// returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadReadsEveryKind(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"p.yaml": pipelineYAML,
		"triggers.yaml": `version: 1
triggers:
  - name: hook
    type: webhook
    config: p.yaml
    methods: [POST, PUT]
    dedupe_header: Idempotency-Key
    debounce_secs: 30
  - name: drop
    type: object_arrival
    config: {version: 1, pipeline: {source: {type: csv, config: {path: "${trigger.path}"}}, sink: {type: stdout, config: {}}}}
    store: {type: file, path: in, glob: "*.csv"}
    poll_interval_secs: 0.5
    start_at: beginning
    run: {name: "load {object_key}", labels: {team: data}, timeout_secs: 60}
  - name: nightly
    type: schedule
    config: p.yaml
    cron: "0 2 * * *"
    timezone: Europe/Berlin
  - name: off
    type: schedule
    enabled: false
    config: p.yaml
    cron: "@hourly"
`,
	})
	set, err := Load(filepath.Join(dir, "triggers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Triggers) != 4 {
		t.Fatalf("%d triggers, want 4", len(set.Triggers))
	}
	hook, drop, nightly, off := set.Lookup("hook"), set.Lookup("drop"), set.Lookup("nightly"), set.Lookup("off")
	if hook.debounce != 30*time.Second || hook.dedupeHeader != "Idempotency-Key" || len(hook.methods) != 2 {
		t.Fatalf("webhook %+v", hook)
	}
	if drop.dir != filepath.Join(dir, "in") || drop.glob != "*.csv" || drop.poll != 500*time.Millisecond || !drop.beginning {
		t.Fatalf("object_arrival %+v", drop)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	// 02:00 in Berlin on a summer day is 00:00 UTC.
	next := nightly.schedule.Next(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 7, 2, 2, 0, 0, 0, berlin); !next.Equal(want) {
		t.Fatalf("next nightly slot %v, want %v", next, want)
	}
	if off.Enabled || !nightly.Enabled {
		t.Fatalf("enabled: off %v, nightly %v", off.Enabled, nightly.Enabled)
	}
	if hook.fingerprint == "" || drop.fingerprint == nightly.fingerprint {
		t.Fatal("fingerprints do not tell the triggers apart")
	}
}

func TestLoadNamesEachProblemWhereItIs(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		// want are substrings of one problem.
		want []string
	}{
		{"unknown type", "version: 1\ntriggers:\n  - name: q\n    type: queue_depth\n    config: p.yaml\n",
			[]string{"triggers.yaml:4:5: triggers[0].type", "webhook", "object_arrival", "schedule"}},
		{"cron that does not parse", "version: 1\ntriggers:\n  - name: n\n    type: schedule\n    config: p.yaml\n    cron: \"61 * * * *\"\n",
			[]string{"triggers.yaml:6:5: triggers[0].cron", "does not parse"}},
		{"@every", "version: 1\ntriggers:\n  - name: n\n    type: schedule\n    config: p.yaml\n    cron: \"@every 5s\"\n",
			[]string{"triggers[0].cron", "@every is not supported"}},
		{"unknown field", "version: 1\ntriggers:\n  - name: hook\n    type: webhook\n    config: p.yaml\n    debounce_sec: 5\n",
			[]string{"triggers.yaml:6:5: triggers[0].debounce_sec", "unknown key", "debounce_secs"}},
		{"field of another kind", "version: 1\ntriggers:\n  - name: hook\n    type: webhook\n    config: p.yaml\n    cron: \"* * * * *\"\n",
			[]string{"triggers[0].cron", "unknown key"}},
		{"unknown store", "version: 1\ntriggers:\n  - name: d\n    type: object_arrival\n    config: p.yaml\n    store: {type: s3, path: x}\n",
			[]string{"triggers[0].store.type"}},
		{"duplicate name", "version: 1\ntriggers:\n  - {name: a, type: webhook, config: p.yaml}\n  - {name: a, type: webhook, config: p.yaml}\n",
			[]string{"triggers.yaml:4:6: triggers[1].name", "used by triggers[0]"}},
		{"name with a slash", "version: 1\ntriggers:\n  - {name: a/b, type: webhook, config: p.yaml}\n",
			[]string{"triggers[0].name", "trigger name"}},
		{"time zone", "version: 1\ntriggers:\n  - {name: n, type: schedule, config: p.yaml, cron: \"@daily\", timezone: Mars/Olympus}\n",
			[]string{"triggers[0].timezone", "IANA"}},
		{"missing config file", "version: 1\ntriggers:\n  - {name: a, type: webhook, config: nope.yaml}\n",
			[]string{"triggers[0].config", "read the pipeline config"}},
		{"field the kind does not fill", "version: 1\ntriggers:\n  - {name: n, type: schedule, config: q.yaml, cron: \"@daily\"}\n",
			[]string{"q.yaml:1:", "${trigger.object_key} is not a field of a schedule trigger"}},
		{"credentials header", "version: 1\ntriggers:\n  - {name: a, type: webhook, config: {pipeline: {x: \"${trigger.header.Authorization}\"}}}\n",
			[]string{"triggers[0].config.pipeline.x", "carries credentials"}},
		{"credentials as dedupe key", "version: 1\ntriggers:\n  - {name: a, type: webhook, config: p.yaml, dedupe_header: Authorization}\n",
			[]string{"triggers[0].dedupe_header", "credentials"}},
		{"version", "version: 2\ntriggers: []\n", []string{"version"}},
		{"not YAML", "version: 1\ntriggers: [\n", []string{"triggers.yaml:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"p.yaml": pipelineYAML, "q.yaml": "name: \"${trigger.object_key}\"\n", "triggers.yaml": tc.body})
			_, err := Load(filepath.Join(dir, "triggers.yaml"))
			if err == nil {
				t.Fatal("loaded")
			}
			var found bool
			for _, p := range pipeline.ConfigProblems(err) {
				msg := strings.TrimPrefix(p.Error(), dir+string(filepath.Separator))
				ok := true
				for _, w := range tc.want {
					ok = ok && strings.Contains(msg, w)
				}
				found = found || ok
			}
			if !found {
				t.Fatalf("no problem reads %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestSchemaAcceptsTheExamples(t *testing.T) {
	// The examples are checked by Load, whose first step is the schema; a
	// file that uses every field of every kind must pass it.
	matches, err := filepath.Glob(filepath.Join("..", "..", "examples", "triggers", "*.yaml"))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no example triggers file: %v", err)
	}
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := pipeline.ParseDocument(data, pipeline.FormatYAML)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if _, isTriggers := doc.Tree().(map[string]any)["triggers"]; !isTriggers {
			continue
		}
		if _, err := Load(m); err != nil {
			t.Errorf("example %s does not load: %v", m, err)
		}
	}
}
