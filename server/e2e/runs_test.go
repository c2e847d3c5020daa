package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// countLinesIfExists is countLines for a file a sink may never have created.
func countLinesIfExists(t *testing.T, path string) int {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	return countLines(t, path)
}

func TestSubmitPollLogsMetricsAndPagination(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		out := filepath.Join(t.TempDir(), "out.jsonl")
		sub := s.submit(client.SubmitRequest{Config: generateToFile(1000, out), Labels: &map[string]string{"team": "data"}})
		if sub.Status != client.RunStatusQueued || sub.RunId == "" {
			t.Fatalf("submit = %+v", sub)
		}
		rec := s.await(sub.RunId, client.RunStatusCompleted)
		if rec.RecordsWritten != 1000 || len(rec.Invocations) != 1 || rec.Invocations[0].RecordsWritten != 1000 ||
			rec.Invocations[0].Error != nil || rec.Error != nil {
			t.Fatalf("record = %+v", rec)
		}
		if rec.StartedAt == nil || rec.FinishedAt == nil || rec.ElapsedSecs == nil || *rec.ElapsedSecs <= 0 ||
			rec.Name == nil || *rec.Name != "gen" || rec.Labels["team"] != "data" {
			t.Fatalf("record metadata = %+v", rec)
		}
		if n := countLines(t, out); n != 1000 {
			t.Fatalf("sink file has %d lines, want 1000", n)
		}

		// Persisted logs, paged two lines at a time.
		var all []client.LogLine
		for after := int64(0); ; {
			page := s.logs(sub.RunId, after, 2)
			if len(page) == 0 {
				break
			}
			if len(page) > 2 {
				t.Fatalf("page of %d lines with limit 2", len(page))
			}
			all = append(all, page...)
			after = page[len(page)-1].Seq
		}
		for i, l := range all {
			if l.Seq != int64(i+1) {
				t.Fatalf("line %d has seq %d", i, l.Seq)
			}
		}
		if len(all) < 3 || all[len(all)-1].Line != "run completed" {
			t.Fatalf("persisted logs = %+v", all)
		}

		// The SSE stream of the finished run replays the same lines, then ends.
		events := readSSE(t, s, sub.RunId)
		if got := len(events["log"]); got != len(all) {
			t.Fatalf("SSE sent %d log events, want %d", got, len(all))
		}
		if len(events["end"]) != 1 || !strings.Contains(events["end"][0], `"completed"`) {
			t.Fatalf("SSE end events = %v", events["end"])
		}

		// 119 more runs make 120; list them 50 at a time.
		want := map[string]bool{sub.RunId: true}
		for range 119 {
			want[s.submit(client.SubmitRequest{Config: generateToFile(1, filepath.Join(t.TempDir(), "one.jsonl"))}).RunId] = true
		}
		seen := map[string]bool{}
		var prev *client.RunRecord
		pages := 0
		params := &client.ListRunsParams{Limit: ptr(int64(50))}
		for {
			resp, err := s.admin().ListRunsWithResponse(context.Background(), params)
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("list: %v %s", err, resp.Body)
			}
			pages++
			for i := range resp.JSON200.Runs {
				r := resp.JSON200.Runs[i]
				if seen[r.RunId] {
					t.Fatalf("run %s listed twice", r.RunId)
				}
				seen[r.RunId] = true
				if prev != nil && (r.SubmittedAt.After(prev.SubmittedAt) || (r.SubmittedAt.Equal(prev.SubmittedAt) && r.RunId > prev.RunId)) {
					t.Fatalf("runs out of order: %s after %s", r.RunId, prev.RunId)
				}
				prev = &r
			}
			if resp.JSON200.NextCursor == nil {
				break
			}
			params.Cursor = resp.JSON200.NextCursor
		}
		if pages != 3 || len(seen) != 120 {
			t.Fatalf("listed %d runs in %d pages, want 120 in 3", len(seen), pages)
		}
		for id := range want {
			if !seen[id] {
				t.Fatalf("run %s missing from the list", id)
			}
		}
		for id := range want {
			s.await(id, client.RunStatusCompleted)
		}

		// Metrics parse as Prometheus text and count what happened.
		families := scrape(t, s)
		if got := families["faucet_runs_submitted_total"].GetMetric()[0].GetCounter().GetValue(); got != 120 {
			t.Fatalf("faucet_runs_submitted_total = %v, want 120", got)
		}
		if got := finishedByLabels(families); len(got) != 1 || got["completed/ok"] != 120 {
			t.Fatalf("faucet_runs_finished_total = %v, want 120 completed/ok", got)
		}
		if got := families["faucet_records_written_total"].GetMetric()[0].GetCounter().GetValue(); got != 1119 {
			t.Fatalf("faucet_records_written_total = %v, want 1119", got)
		}
		ops := map[string]bool{}
		for _, m := range families["faucet_http_request_duration_seconds"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" {
					ops[l.GetValue()] = true
				}
			}
		}
		for _, op := range []string{"submitRun", "getRun", "listRuns", "streamRunLogs"} {
			if !ops[op] {
				t.Fatalf("no HTTP duration for operation %s (have %v)", op, ops)
			}
		}
		for _, name := range []string{"faucet_runs_queued", "faucet_runs_in_flight", "faucet_run_duration_seconds", "faucet_idempotency_replays_total"} {
			if families[name] == nil {
				t.Fatalf("metric %s missing", name)
			}
		}
	})
}

// scrape reads the server's /metrics, which must parse as Prometheus text.
func scrape(t *testing.T, s *server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	return families
}

// finishedByLabels is faucet_runs_finished_total by "status/reason".
func finishedByLabels(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families["faucet_runs_finished_total"].GetMetric() {
		var status, reason string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "status":
				status = l.GetValue()
			case "reason":
				reason = l.GetValue()
			}
		}
		out[status+"/"+reason] += m.GetCounter().GetValue()
	}
	return out
}

// readSSE reads a run's log stream until the end event and returns the data
// of each event by name.
func readSSE(t *testing.T, s *server, id string) map[string][]string {
	t.Helper()
	return readSSEWith(t, s, id, nil)
}

// readSSEWith is readSSE with request parameters (Last-Event-ID).
func readSSEWith(t *testing.T, s *server, id string, params *client.StreamRunLogsParams) map[string][]string {
	t.Helper()
	resp, err := s.admin().StreamRunLogs(context.Background(), id, params)
	if err != nil {
		t.Fatal(err)
	}
	return readEvents(t, resp)
}

// readEvents reads an event stream up to its end event, by event name.
func readEvents(t *testing.T, resp *http.Response) map[string][]string {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := map[string][]string{}
	sc := bufio.NewScanner(resp.Body)
	var name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && name != "":
			events[name] = append(events[name], data)
			if name == "end" {
				return events
			}
			name, data = "", ""
		}
	}
	t.Fatalf("SSE stream closed without an end event: %v (%v)", events, sc.Err())
	return nil
}

func TestLiveSSEFollowsARunningRun(t *testing.T) {
	eachHistory(t, testLiveSSEFollowsARunningRun)
}

func testLiveSSEFollowsARunningRun(t *testing.T, h history) {
	s := start(t, serverOpts{history: h.url(t)})
	sub := s.submit(client.SubmitRequest{Config: holding(3, filepath.Join(t.TempDir(), "out.jsonl"))})
	s.await(sub.RunId, client.RunStatusRunning)
	type result struct{ events map[string][]string }
	done := make(chan result, 1)
	go func() { done <- result{readSSE(t, s, sub.RunId)} }()
	s.awaitLog(sub.RunId, regexp.MustCompile(`^invocation started`))
	resp, err := s.admin().CancelRunWithResponse(context.Background(), sub.RunId)
	if err != nil || resp.StatusCode() != http.StatusAccepted {
		t.Fatalf("cancel: %v %d", err, resp.StatusCode())
	}
	ev := (<-done).events
	if len(ev["end"]) != 1 || !strings.Contains(ev["end"][0], `"cancelled"`) {
		t.Fatalf("end = %v", ev["end"])
	}
	last := ev["log"][len(ev["log"])-1]
	if !strings.Contains(last, "run cancelled") {
		t.Fatalf("last live line = %s", last)
	}
}

func TestIdempotency(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		out := filepath.Join(t.TempDir(), "out.jsonl")
		body := client.SubmitRequest{Config: generateToFile(5, out), IdempotencyKey: ptr("nightly-1")}
		first := s.submit(body)
		again := s.submit(body)
		if again.RunId != first.RunId {
			t.Fatalf("replay returned %s, want %s", again.RunId, first.RunId)
		}
		if first.Replayed || !again.Replayed {
			t.Fatalf("replayed: first %v, again %v; want false then true", first.Replayed, again.Replayed)
		}
		body.Labels = &map[string]string{"changed": "yes"}
		resp, err := s.admin().SubmitRunWithResponse(context.Background(), nil, body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusConflict || resp.ApplicationproblemJSON409 == nil || resp.ApplicationproblemJSON409.Error.Code != "conflict" {
			t.Fatalf("different payload: %d %s", resp.StatusCode(), resp.Body)
		}

		// 50 concurrent submits of one key and payload create exactly one run.
		race := client.SubmitRequest{Config: generateToFile(5, out), IdempotencyKey: ptr("race-key"), Name: ptr("race")}
		ids := make([]string, 50)
		created := make([]bool, len(ids))
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.admin().SubmitRunWithResponse(context.Background(), nil, race)
				if err != nil || r.JSON202 == nil {
					t.Errorf("submit %d: %v %d %s", i, err, r.StatusCode(), r.Body)
					return
				}
				ids[i] = r.JSON202.RunId
				created[i] = !r.JSON202.Replayed
			}()
		}
		wg.Wait()
		if n := len(slices.DeleteFunc(created, func(c bool) bool { return !c })); n != 1 {
			t.Fatalf("%d of the concurrent submits say they created the run, want 1", n)
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("concurrent submits returned different runs: %v", ids)
			}
		}
		list, err := s.admin().ListRunsWithResponse(context.Background(), &client.ListRunsParams{Name: ptr("race")})
		if err != nil || list.JSON200 == nil {
			t.Fatal(err)
		}
		if n := len(list.JSON200.Runs); n != 1 || list.JSON200.Runs[0].RunId != ids[0] {
			t.Fatalf("%d runs named race, want exactly 1", n)
		}
		s.await(ids[0], client.RunStatusCompleted)
		s.await(first.RunId, client.RunStatusCompleted)
		// One sequential and 49 concurrent submits were replays.
		if got := scrape(t, s)["faucet_idempotency_replays_total"].GetMetric()[0].GetCounter().GetValue(); got != 50 {
			t.Fatalf("faucet_idempotency_replays_total = %v, want 50", got)
		}

		// A deleted run frees its key.
		del, err := s.admin().DeleteRunWithResponse(context.Background(), first.RunId)
		if err != nil || del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete: %v %d", err, del.StatusCode())
		}
		body.Labels = nil
		if fresh := s.submit(body); fresh.RunId == first.RunId {
			t.Fatal("a deleted run's key still replays the deleted run")
		}
	})
}

func TestCancelTimeoutAndDelete(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t), args: []string{"--max-concurrent-runs", "1"}})
		c := s.admin()
		ctx := context.Background()
		outA := filepath.Join(t.TempDir(), "a.jsonl")
		a := s.submit(client.SubmitRequest{Config: holdingAppend(5, outA)})
		s.await(a.RunId, client.RunStatusRunning)
		requireLiveElapsed(t, s, a.RunId)
		b := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "b.jsonl"))})
		if got := s.get(b.RunId).Status; got != client.RunStatusQueued {
			t.Fatalf("second run is %s, want queued behind the first", got)
		}

		// Delete is refused while a run is not terminal.
		for _, id := range []string{a.RunId, b.RunId} {
			del, err := c.DeleteRunWithResponse(ctx, id)
			if err != nil || del.StatusCode() != http.StatusConflict {
				t.Fatalf("delete unfinished %s: %v %d", id, err, del.StatusCode())
			}
		}

		// Cancelling the queued run ends it at once, the running one goes on.
		if r, err := c.CancelRunWithResponse(ctx, b.RunId); err != nil || r.StatusCode() != http.StatusAccepted {
			t.Fatalf("cancel queued: %v %d", err, r.StatusCode())
		}
		rb := s.await(b.RunId, client.RunStatusCancelled)
		if rb.StartedAt != nil || rb.RecordsWritten != 0 {
			t.Fatalf("cancelled queued run = %+v", rb)
		}
		if got := s.get(a.RunId).Status; got != client.RunStatusRunning {
			t.Fatalf("first run is %s after cancelling the second", got)
		}

		if r, err := c.CancelRunWithResponse(ctx, a.RunId); err != nil || r.StatusCode() != http.StatusAccepted {
			t.Fatalf("cancel running: %v %d", err, r.StatusCode())
		}
		ra := s.await(a.RunId, client.RunStatusCancelled)
		// A cancel can land before the first batch reaches the sink, which
		// then never opens its file: zero lines either way.
		if n := countLinesIfExists(t, outA); int64(n) != ra.RecordsWritten {
			t.Fatalf("sink committed %d lines, the record says %d acknowledged", n, ra.RecordsWritten)
		}
		if r, err := c.CancelRunWithResponse(ctx, a.RunId); err != nil || r.StatusCode() != http.StatusOK {
			t.Fatalf("cancel finished run: %v %d, want 200", err, r.StatusCode())
		}
		if r, err := c.CancelRunWithResponse(ctx, "no-such-run"); err != nil || r.StatusCode() != http.StatusNotFound {
			t.Fatalf("cancel unknown run: %v %d, want 404", err, r.StatusCode())
		}
		del, err := c.DeleteRunWithResponse(ctx, a.RunId)
		if err != nil || del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete finished run: %v %d", err, del.StatusCode())
		}
		if r, err := c.GetRunWithResponse(ctx, a.RunId); err != nil || r.StatusCode() != http.StatusNotFound || r.ApplicationproblemJSON404 == nil {
			t.Fatalf("get deleted run: %v %d", err, r.StatusCode())
		}

		// timeout_secs cancels the run and fails it with the reason.
		tm := s.submit(client.SubmitRequest{Config: holding(2, filepath.Join(t.TempDir(), "t.jsonl")), TimeoutSecs: ptr(int64(1))})
		rt := s.await(tm.RunId, client.RunStatusFailed)
		if rt.Error == nil || !strings.Contains(*rt.Error, "timeout_secs") {
			t.Fatalf("timed-out run = %+v", rt)
		}
		if got := finishedByLabels(scrape(t, s)); len(got) != 2 || got["cancelled/cancelled"] != 2 || got["failed/timeout"] != 1 {
			t.Fatalf("faucet_runs_finished_total = %v, want 2 cancelled/cancelled and 1 failed/timeout", got)
		}
	})
}

// TestRunsCancelKeepsAnOverwrittenFile cancels, with faucet runs cancel, a
// run whose sink overwrites a file once it has acknowledged records: the
// file keeps its previous contents, and the run's record says so.
func TestRunsCancelKeepsAnOverwrittenFile(t *testing.T) {
	s := start(t, serverOpts{})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	const previous = "{\"previous\": true}\n"
	if err := os.WriteFile(out, []byte(previous), 0o644); err != nil {
		t.Fatal(err)
	}
	id := s.submit(client.SubmitRequest{Config: holding(3, out)}).RunId
	testwait.Until(t, time.Minute, func() error {
		if rec := s.get(id); rec.RecordsWritten != 3 {
			return fmt.Errorf("run %s never acknowledged its 3 records: %+v", id, rec)
		}
		return nil
	})
	if out, err := faucetCLI(t, s, "cancel", id); err != nil || !strings.Contains(out, "cancellation requested") {
		t.Fatalf("runs cancel: %v\n%s", err, out)
	}
	rec := s.await(id, client.RunStatusCancelled)
	if rec.RecordsWritten != 0 || len(rec.Invocations) != 1 || !strings.Contains(deref(rec.Invocations[0].Error), "keeps its previous contents") {
		t.Errorf("cancelled overwrite = %+v, want no records and an invocation saying the file was kept", rec)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != previous {
		t.Errorf("the cancelled overwrite left %q (%v), want the previous file", got, err)
	}
}

// requireLiveElapsed checks that a running run's elapsed_secs is positive
// and grows from one read to a later one.
func requireLiveElapsed(t *testing.T, s *server, id string) {
	t.Helper()
	first := s.get(id)
	if first.Status != client.RunStatusRunning || first.ElapsedSecs == nil || *first.ElapsedSecs <= 0 {
		t.Fatalf("running run = %s elapsed %v", first.Status, first.ElapsedSecs)
	}
	testwait.Until(t, time.Minute, func() error {
		rec := s.get(id)
		if rec.Status != client.RunStatusRunning {
			t.Fatalf("run %s stopped running: %s", id, rec.Status)
		}
		if rec.ElapsedSecs == nil || *rec.ElapsedSecs <= *first.ElapsedSecs {
			return fmt.Errorf("elapsed_secs stayed at %v while the run ran", *first.ElapsedSecs)
		}
		return nil
	})
}

func TestQueueFullIs429WithRetryAfter(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t), args: []string{"--max-concurrent-runs", "1", "--max-queued-runs", "1"}})
		a := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "a.jsonl"))})
		s.await(a.RunId, client.RunStatusRunning)
		b := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "b.jsonl"))})
		resp, err := s.admin().SubmitRunWithResponse(context.Background(), nil, client.SubmitRequest{Config: holding(1, filepath.Join(t.TempDir(), "c.jsonl"))})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusTooManyRequests || resp.ApplicationproblemJSON429 == nil ||
			resp.ApplicationproblemJSON429.Error.Code != "queue_full" || resp.HTTPResponse.Header.Get("Retry-After") == "" {
			t.Fatalf("third submit: %d %v %s", resp.StatusCode(), resp.HTTPResponse.Header, resp.Body)
		}
		ready, err := http.Get(s.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		ready.Body.Close()
		if ready.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("readyz with a full queue = %d, want 503", ready.StatusCode)
		}
		for _, id := range []string{b.RunId, a.RunId} {
			s.admin().CancelRunWithResponse(context.Background(), id)
			s.await(id, client.RunStatusCancelled)
		}
		// The slots are free again.
		s.submit(client.SubmitRequest{Config: generateToFile(1, filepath.Join(t.TempDir(), "d.jsonl"))})
	})
}

func problemOf(t *testing.T, body []byte) client.Problem {
	t.Helper()
	var p client.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a problem document: %s", body)
	}
	return p
}
