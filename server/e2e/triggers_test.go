package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// fire calls a webhook trigger and decodes its answer, failing the test on
// another status than want.
func (s *server) fire(method, name, body string, header map[string]string, want int) client.SubmitResponse {
	s.t.Helper()
	status, _, out := s.callWith(method, "/v1/triggers/"+name, "application/json", body, header)
	if status != want {
		s.t.Fatalf("%s /v1/triggers/%s: %d %s, want %d", method, name, status, out, want)
	}
	var r client.SubmitResponse
	if want == http.StatusAccepted {
		if err := json.Unmarshal(out, &r); err != nil {
			s.t.Fatal(err)
		}
	}
	return r
}

// runsNamed lists every run called name.
func (s *server) runsNamed(name string) []client.RunRecord {
	s.t.Helper()
	var out []client.RunRecord
	params := &client.ListRunsParams{Name: &name, Limit: ptr(int64(500))}
	for {
		resp, err := s.admin().ListRunsWithResponse(context.Background(), params)
		if err != nil || resp.JSON200 == nil {
			s.t.Fatalf("list runs: %v %s", err, resp.Body)
		}
		out = append(out, resp.JSON200.Runs...)
		if resp.JSON200.NextCursor == nil {
			return out
		}
		params.Cursor = resp.JSON200.NextCursor
	}
}

func (s *server) auditActions(principal string) []string {
	s.t.Helper()
	resp, err := s.admin().ListAuditWithResponse(context.Background(), &client.ListAuditParams{Principal: &principal})
	if err != nil || resp.JSON200 == nil {
		s.t.Fatalf("audit: %v", err)
	}
	var out []string
	for _, e := range resp.JSON200.Entries {
		out = append(out, e.Action)
	}
	return out
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// webhookTriggers is a triggers file of two webhooks and a directory; its
// sinks write under out.
func webhookTriggers(out string, extra string) string {
	return fmt.Sprintf(`version: 1
triggers:
  - name: hook
    type: webhook
    methods: [POST]
    dedupe_header: Idempotency-Key
    config:
      version: 1
      pipeline:
        source: {type: generate, config: {count: 2}}
        sink: {type: jsonl, config: {path: "%[1]s/${trigger.body.table}.jsonl"}}
  - name: calm
    type: webhook
    methods: [POST, PUT]
    debounce_secs: 3600
    config: {version: 1, pipeline: {source: {type: generate, config: {count: 1}}, sink: {type: jsonl, config: {path: "%[1]s/calm.jsonl"}}}}
  - name: drops
    type: object_arrival
    store: {type: file, path: in, glob: "*.csv"}
    poll_interval_secs: 0.2
    run: {name: "drop {object_key}"}
    config: {version: 1, pipeline: {source: {type: csv, config: {path: "${trigger.path}"}}, sink: {type: jsonl, config: {path: "%[1]s/${trigger.object_key}.jsonl"}}}}
%[2]s`, out, extra)
}

func TestTriggersAndReload(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		file := filepath.Join(dir, "triggers.yaml")
		writeFile(t, file, webhookTriggers(out, ""))
		defaults := filepath.Join(dir, "defaults.yaml")
		writeFile(t, defaults, "name: from-defaults-1\n")
		writeFile(t, filepath.Join(dir, "in", ".keep"), "")
		s := start(t, serverOpts{history: h.url(t), args: []string{"--triggers", file, "--default-config", defaults}})

		// A webhook: its body feeds the config, its dedupe header is the
		// idempotency key, and its runs are the trigger's in the audit log.
		first := s.fire(http.MethodPost, "hook", `{"table": "users"}`, map[string]string{"Idempotency-Key": "k-1"}, http.StatusAccepted)
		if rec := s.await(first.RunId, client.RunStatusCompleted); rec.Name == nil || *rec.Name != "hook" || rec.Labels["faucet.trigger.name"] != "hook" {
			t.Fatalf("webhook run %+v", rec)
		}
		if _, err := os.Stat(filepath.Join(out, "users.jsonl")); err != nil {
			t.Fatalf("the run did not write the file its body named: %v", err)
		}
		again := s.fire(http.MethodPost, "hook", `{"table": "users"}`, map[string]string{"Idempotency-Key": "k-1"}, http.StatusAccepted)
		if !again.Replayed || again.RunId != first.RunId {
			t.Fatalf("repeated dedupe header: %+v, want a replay of %s", again, first.RunId)
		}
		if acts := s.auditActions("trigger:hook"); len(acts) != 2 || acts[0] != "run.submit" {
			t.Fatalf("audit of trigger:hook: %v, want the submit and its replay", acts)
		}
		// A method the trigger does not take, a name no trigger has, a body
		// its config cannot read: 4xx, and no run.
		s.fire(http.MethodPut, "hook", `{"table": "x"}`, nil, http.StatusBadRequest)
		s.fire(http.MethodPost, "nope", "", nil, http.StatusNotFound)
		s.fire(http.MethodPost, "hook", `{"tabel": "x"}`, nil, http.StatusBadRequest)
		s.fire(http.MethodPost, "drops", "", nil, http.StatusNotFound)
		if runs := s.runsNamed("hook"); len(runs) != 1 {
			t.Fatalf("%d runs of hook, want 1", len(runs))
		}
		// debounce_secs: the first fire runs, the next is coalesced.
		calm := s.fire(http.MethodPut, "calm", "", nil, http.StatusAccepted)
		s.await(calm.RunId, client.RunStatusCompleted)
		if status, _, body := s.call(http.MethodPost, "/v1/triggers/calm", ""); status != http.StatusOK || !strings.Contains(string(body), `"coalesced"`) {
			t.Fatalf("fire within debounce_secs: %d %s", status, body)
		}
		if runs := s.runsNamed("calm"); len(runs) != 1 {
			t.Fatalf("%d runs of calm, want 1", len(runs))
		}
		if got := s.metric("faucet_trigger_coalesced_total", map[string]string{"trigger": "calm"}); got != 1 {
			t.Fatalf("coalesced fires of calm: %v", got)
		}
		if got := s.metric("faucet_trigger_fires_total", map[string]string{"trigger": "hook", "kind": "webhook"}); got != 1 {
			t.Fatalf("fires of hook: %v", got)
		}

		// object_arrival: one run per file that lands.
		writeFile(t, filepath.Join(dir, "in", "a.csv"), "id\n1\n2\n")
		var drop []client.RunRecord
		testwait.Until(t, time.Minute, func() error {
			if drop = s.runsNamed("drop a.csv"); len(drop) != 1 {
				return fmt.Errorf("%d runs for a.csv", len(drop))
			}
			return nil
		})
		if rec := s.await(drop[0].RunId, client.RunStatusCompleted); rec.RecordsWritten != 2 || rec.Labels["faucet.trigger.object_key"] != "a.csv" {
			t.Fatalf("object_arrival run %+v", rec)
		}

		// /readyz reports each trigger.
		rs := s.ready()
		if rs.Triggers == nil || len(*rs.Triggers) != 3 {
			t.Fatalf("readyz triggers: %+v", rs.Triggers)
		}
		for _, th := range *rs.Triggers {
			if !th.Healthy {
				t.Fatalf("trigger %s unhealthy: %+v", th.Name, th)
			}
		}

		// Fires racing reloads of the same file always find the trigger:
		// the swap leaves no instant without one.
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 10 {
					key := fmt.Sprintf("race-%d-%d", g, i)
					if status, _, body := s.callWith(http.MethodPost, "/v1/triggers/hook", "application/json", `{"table": "race"}`, map[string]string{"Idempotency-Key": key}); status != http.StatusAccepted {
						t.Errorf("fire during reloads: %d %s", status, body)
						return
					}
				}
			})
		}
		for range 5 {
			if status, _, body := s.call(http.MethodPost, "/v1/reload", ""); status != http.StatusOK {
				t.Errorf("reload during fires: %d %s", status, body)
			}
		}
		wg.Wait()
		if runs := s.runsNamed("hook"); len(runs) != 41 {
			t.Fatalf("%d runs of hook after 40 fires with distinct keys, want 41", len(runs))
		}

		// Reload: the new triggers file and defaults are in force at once.
		writeFile(t, file, webhookTriggers(out, `  - name: added
    type: webhook
    config: {version: 1, pipeline: {source: {type: generate, config: {count: 1}}, sink: {type: jsonl, config: {path: "`+out+`/added.jsonl"}}}}
`))
		writeFile(t, defaults, "name: from-defaults-2\n")
		if status, _, body := s.call(http.MethodPost, "/v1/reload", ""); status != http.StatusOK || !strings.Contains(string(body), `"reloaded":true`) {
			t.Fatalf("reload: %d %s", status, body)
		}
		s.await(s.fire(http.MethodPost, "added", "", nil, http.StatusAccepted).RunId, client.RunStatusCompleted)
		named := s.submit(client.SubmitRequest{Config: unnamed(generateToFile(1, filepath.Join(out, "plain.jsonl")))})
		if rec := s.await(named.RunId, client.RunStatusCompleted); rec.Name == nil || *rec.Name != "from-defaults-2" {
			t.Fatalf("run after the reload named %q, want the new defaults' name", deref(rec.Name))
		}
		// The directory kept its fired file across the reload.
		writeFile(t, filepath.Join(dir, "in", "b.csv"), "id\n1\n")
		testwait.Until(t, time.Minute, func() error {
			if n := len(s.runsNamed("drop b.csv")); n != 1 {
				return fmt.Errorf("%d runs for b.csv", n)
			}
			return nil
		})
		if n := len(s.runsNamed("drop a.csv")); n != 1 {
			t.Fatalf("a.csv fired %d times across the reload", n)
		}

		// A broken file is 422 naming the problem, and the old files stay.
		writeFile(t, file, "version: 1\ntriggers:\n  - {name: x, type: schedule, config: {}, cron: \"61 * * * *\"}\n")
		status, _, body := s.call(http.MethodPost, "/v1/reload", "")
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "triggers[0].cron") || !strings.Contains(string(body), "does not parse") {
			t.Fatalf("reload of a bad cron: %d %s", status, body)
		}
		writeFile(t, file, webhookTriggers(out, "  - {name: x, type: webhook, config: {version: 1, pipeline: {source: {type: nope, config: {}}, sink: {type: stdout, config: {}}}}}\n"))
		status, _, body = s.call(http.MethodPost, "/v1/reload", "")
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "pipeline.source.type") {
			t.Fatalf("reload of a trigger with an unknown connector: %d %s", status, body)
		}
		writeFile(t, file, webhookTriggers(out, ""))
		writeFile(t, defaults, "name: [broken\n")
		status, _, body = s.call(http.MethodPost, "/v1/reload", "")
		if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "defaults.yaml") {
			t.Fatalf("reload of broken YAML: %d %s", status, body)
		}
		s.await(s.fire(http.MethodPost, "added", "", nil, http.StatusAccepted).RunId, client.RunStatusCompleted)
		named = s.submit(client.SubmitRequest{Config: unnamed(generateToFile(1, filepath.Join(out, "plain2.jsonl")))})
		if rec := s.await(named.RunId, client.RunStatusCompleted); rec.Name == nil || *rec.Name != "from-defaults-2" {
			t.Fatalf("run after a rejected reload named %q", deref(rec.Name))
		}
		if acts := s.auditActions("token"); !contains(acts, "config.reload") || !contains(acts, "config.reload.rejected") {
			t.Fatalf("admin's audit %v lacks the reloads", acts)
		}
		// Only an admin reloads.
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/reload", nil)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("reload without a token: %v %v", resp, err)
		}
	})
}

// unnamed is config without its name, which the defaults then give.
func unnamed(config string) string { return strings.Replace(config, "name: gen\n", "", 1) }

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestTriggersFileRefusals: a server with a bad triggers file does not
// start, and says where the problem is; one without the flags reloads
// nothing.
func TestTriggersFileRefusals(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}}\n  sink: {type: jsonlx, config: {}}\n")
	for _, tc := range []struct{ name, body, want string }{
		{"unknown type", "version: 1\ntriggers:\n  - {name: q, type: queue_depth, config: {}}\n", "triggers[0].type"},
		{"bad cron", "version: 1\ntriggers:\n  - {name: n, type: schedule, config: {}, cron: \"* * *\"}\n", "triggers[0].cron"},
		// A config is loaded as its fires will load it: an unknown connector
		// is found at start, not at the first fire.
		{"unknown connector inline", "version: 1\ntriggers:\n  - name: h\n    type: webhook\n    config: {version: 1, pipeline: {source: {type: csvx, config: {}}, sink: {type: stdout, config: {}}}}\n",
			"triggers.yaml:5:5: triggers[0].config: pipeline.source.type"},
		{"unknown connector in a file", "version: 1\ntriggers:\n  - {name: h, type: webhook, config: p.yaml}\n", "p.yaml:4:"},
	} {
		file := filepath.Join(dir, "triggers.yaml")
		writeFile(t, file, tc.body)
		out, err := exec.Command(fastBin, "serve", "--listen", "127.0.0.1:0", "--history", "memory", "--no-auth", "--triggers", file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), dir) || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "listening") {
			t.Errorf("%s: serve %v\n%s", tc.name, err, out)
		}
	}
	// A directory that is not there fails its trigger's looks: unhealthy
	// after three in a row, and healthy again once it appears.
	writeFile(t, filepath.Join(dir, "watch.yaml"), "version: 1\ntriggers:\n  - {name: w, type: object_arrival, store: {type: file, path: later}, poll_interval_secs: 0.1, "+
		"config: {version: 1, pipeline: {source: {type: generate, config: {count: 1}}, sink: {type: stdout, config: {}}}}}\n")
	w := start(t, serverOpts{history: "memory", args: []string{"--triggers", filepath.Join(dir, "watch.yaml")}})
	health := func(healthy bool) {
		testwait.Until(t, time.Minute, func() error {
			rs := w.ready()
			if rs.Triggers == nil || len(*rs.Triggers) != 1 || (*rs.Triggers)[0].Healthy != healthy {
				return fmt.Errorf("readyz triggers %+v, want healthy %v", rs.Triggers, healthy)
			}
			if th := (*rs.Triggers)[0]; !healthy && (th.LastError == nil || !strings.Contains(*th.LastError, "later") || th.ConsecutiveFailures < 3) {
				return fmt.Errorf("unhealthy trigger %+v names no cause", th)
			}
			return nil
		})
		want := 0.0
		if healthy {
			want = 1
		}
		if got := w.metric("faucet_trigger_healthy", map[string]string{"trigger": "w"}); got != want {
			t.Fatalf("faucet_trigger_healthy %v, want %v", got, want)
		}
	}
	health(false)
	if got := w.metric("faucet_trigger_failures_total", map[string]string{"trigger": "w"}); got < 3 {
		t.Fatalf("failures of w: %v", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "later"), 0o755); err != nil {
		t.Fatal(err)
	}
	health(true)

	s := start(t, serverOpts{history: "memory"})
	if status, _, body := s.call(http.MethodPost, "/v1/reload", ""); status != http.StatusOK || !strings.Contains(string(body), `"reloaded":false`) {
		t.Fatalf("reload without the flags: %d %s", status, body)
	}
	s.fire(http.MethodPost, "any", "", nil, http.StatusNotFound)
	if rs := s.ready(); rs.Triggers != nil {
		t.Fatalf("readyz of a server without triggers: %+v", *rs.Triggers)
	}
}

// TestScheduleClusterFiresEachSlotOnce: three members share a history and
// a per-second schedule; one is killed -9 on the way. Every slot from the
// first to the last starts exactly one run: none twice, none lost.
func TestScheduleClusterFiresEachSlotOnce(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		dir := t.TempDir()
		file := filepath.Join(dir, "triggers.yaml")
		writeFile(t, file, fmt.Sprintf(`version: 1
triggers:
  - name: tick
    type: schedule
    cron: "* * * * * *"
    timezone: Europe/Berlin
    config: {version: 1, pipeline: {source: {type: generate, config: {count: 1}}, sink: {type: jsonl, config: {path: "%s/${trigger.slot}.jsonl"}}}}
`, dir))
		ms := startCluster(t, 3, hist, "--triggers", file, "--log-level", "warn")
		awaitSlots := func(min int) int {
			n := 0
			testwait.Until(t, 2*time.Minute, func() error {
				if n = len(ms[1].runsNamed("tick")); n < min {
					return fmt.Errorf("%d slots fired, waiting for %d", n, min)
				}
				return nil
			})
			return n
		}
		before := awaitSlots(3)
		ms[0].kill9()
		awaitSlots(before + 4)
		// The survivors stop gracefully, so no fire is in flight; a member
		// without triggers reads what they left.
		for _, m := range ms[1:] {
			m.stop()
		}
		runs := startMember(t, hist).runsNamed("tick")
		slots := map[string]int{}
		var first, last time.Time
		for _, r := range runs {
			slot, err := time.Parse(time.RFC3339, r.Labels["faucet.trigger.slot"])
			if err != nil {
				t.Fatalf("run %s has slot label %q", r.RunId, r.Labels["faucet.trigger.slot"])
			}
			slots[slot.UTC().Format(time.RFC3339)]++
			if first.IsZero() || slot.Before(first) {
				first = slot
			}
			if slot.After(last) {
				last = slot
			}
		}
		for slot, n := range slots {
			if n != 1 {
				t.Errorf("slot %s started %d runs", slot, n)
			}
		}
		for at := first; !at.After(last); at = at.Add(time.Second) {
			if slots[at.UTC().Format(time.RFC3339)] == 0 {
				t.Errorf("slot %s was lost (first %s, last %s)", at.UTC().Format(time.RFC3339), first, last)
			}
		}
		t.Logf("%d slots from %s to %s, each once", len(slots), first.Format(time.TimeOnly), last.Format(time.TimeOnly))
	})
}

// TestObjectArrivalClusterFiresEachFileOnce: three members watch one
// directory; one is killed -9 between two batches of files. Every file
// starts exactly one run.
func TestObjectArrivalClusterFiresEachFileOnce(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		dir := t.TempDir()
		file := filepath.Join(dir, "triggers.yaml")
		writeFile(t, filepath.Join(dir, "in", ".keep"), "")
		writeFile(t, file, fmt.Sprintf(`version: 1
triggers:
  - name: drops
    type: object_arrival
    store: {type: file, path: in, glob: "*.csv"}
    poll_interval_secs: 0.2
    run: {name: drop}
    config: {version: 1, pipeline: {source: {type: csv, config: {path: "${trigger.path}"}}, sink: {type: jsonl, config: {path: "%s/out/${trigger.object_key}.jsonl"}}}}
`, dir))
		ms := startCluster(t, 3, hist, "--triggers", file, "--log-level", "warn")
		var names []string
		batch := func(from, to int) {
			for i := from; i < to; i++ {
				name := fmt.Sprintf("f%02d.csv", i)
				writeFile(t, filepath.Join(dir, "in", name), "id\n1\n")
				names = append(names, name)
			}
			testwait.Until(t, time.Minute, func() error {
				if n := len(ms[1].runsNamed("drop")); n < len(names) {
					return fmt.Errorf("%d of %d files fired", n, len(names))
				}
				return nil
			})
		}
		batch(0, 5)
		ms[0].kill9()
		batch(5, 10)
		for _, m := range ms[1:] {
			m.stop()
		}
		fired := map[string]int{}
		for _, r := range startMember(t, hist).runsNamed("drop") {
			fired[r.Labels["faucet.trigger.object_key"]]++
		}
		for _, name := range names {
			if fired[name] != 1 {
				t.Errorf("%s started %d runs", name, fired[name])
			}
		}
		if len(fired) != len(names) {
			t.Errorf("runs for %d files, want %d: %v", len(fired), len(names), fired)
		}
	})
}
