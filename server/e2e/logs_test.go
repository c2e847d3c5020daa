package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// logCap is the per-run cap on persisted log lines in these tests: a run
// logs more than this, so its persisted lines are truncated.
const logCap = 3

func TestLogsFormatsResumeTruncationAndRestart(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		dataDir, hist := t.TempDir(), h.url(t)
		s := start(t, serverOpts{history: hist, dataDir: dataDir, args: []string{"--log-max-lines-per-run", strconv.Itoa(logCap)}})
		id := s.submit(client.SubmitRequest{Config: generateToFile(50, filepath.Join(t.TempDir(), "out.jsonl"))}).RunId
		s.await(id, client.RunStatusCompleted)

		// The run is still in memory: its SSE stream replays the whole ring,
		// more lines than the cap, and nothing was lost from it.
		live := sseLines(t, readSSEWith(t, s, id, nil), false)
		total := int64(len(live))
		if total <= logCap || live[total-1].Seq != total || live[total-1].Line != "run completed" {
			t.Fatalf("live SSE lines = %+v", live)
		}
		// Last-Event-ID resumes after the line the reader last saw.
		resumed := sseLines(t, readSSEWith(t, s, id, &client.StreamRunLogsParams{LastEventID: ptr(strconv.FormatInt(total-2, 10))}), false)
		if len(resumed) != 2 || resumed[0].Seq != total-1 || resumed[1].Seq != total {
			t.Fatalf("SSE resumed after %d = %+v", total-2, resumed)
		}

		// The persisted lines are the newest logCap, then the jsonl trailer.
		body, ct := rawLogs(t, s, id, "jsonl")
		if ct != "application/x-ndjson" {
			t.Fatalf("jsonl Content-Type = %q", ct)
		}
		rows := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		if len(rows) != logCap+1 || rows[logCap] != `{"truncated":true}` {
			t.Fatalf("jsonl of a truncated run:\n%s", body)
		}
		for i, row := range rows[:logCap] {
			var l client.LogLine
			if err := json.Unmarshal([]byte(row), &l); err != nil || l.Seq != total-logCap+1+int64(i) {
				t.Fatalf("jsonl row %d = %s (%v), want seq %d", i, row, err, total-logCap+1+int64(i))
			}
		}

		// format=json: the same lines as one page, with where to go on.
		page := logPage(t, s, id, 0)
		if len(page.Lines) != logCap || !page.Truncated || page.NextAfter != total || page.Lines[0].Seq != total-logCap+1 {
			t.Fatalf("json page of a truncated run: %+v", page)
		}
		if next := logPage(t, s, id, total-1); len(next.Lines) != 1 || next.NextAfter != total {
			t.Fatalf("json page after %d: %+v", total-1, next)
		}
		if end := logPage(t, s, id, total); len(end.Lines) != 0 || end.NextAfter != total {
			t.Fatalf("json page after the last line: %+v", end)
		}

		// format=text: a marker for the dropped lines, then one line each.
		body, ct = rawLogs(t, s, id, "text")
		if ct != "text/plain; charset=utf-8" {
			t.Fatalf("text Content-Type = %q", ct)
		}
		text := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		lineRE := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z (debug|info |warn |error) \S`)
		if len(text) != logCap+1 || !strings.Contains(text[0], "dropped") || !strings.HasSuffix(text[logCap], " run completed") {
			t.Fatalf("text of a truncated run:\n%s", body)
		}
		for _, l := range text[1:] {
			if !lineRE.MatchString(l) {
				t.Fatalf("text line %q is not <time> <level> <line>", l)
			}
		}

		// After a restart the run is no longer in memory: SSE serves the
		// persisted lines, says the earlier ones were dropped, and ends.
		s.stop()
		s2 := start(t, serverOpts{history: hist, dataDir: dataDir, args: []string{"--log-max-lines-per-run", strconv.Itoa(logCap)}})
		events := readSSEWith(t, s2, id, nil)
		if len(events["truncated"]) != 1 || len(events["end"]) != 1 || !strings.Contains(events["end"][0], `"completed"`) {
			t.Fatalf("SSE of a persisted truncated run = %v", events)
		}
		// The event stream's own route serves the same stream.
		follow, err := s2.admin().FollowRunLogs(context.Background(), id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if followed := readEvents(t, follow); !reflect.DeepEqual(followed, events) {
			t.Fatalf("logs/stream = %v, want what logs serves: %v", followed, events)
		}
		persisted := sseLines(t, events, true)
		if len(persisted) != logCap || persisted[0].Seq != total-logCap+1 || persisted[logCap-1].Line != "run completed" {
			t.Fatalf("SSE of persisted lines = %+v", persisted)
		}
		// Resuming there skips what the reader has and the truncation notice.
		events = readSSEWith(t, s2, id, &client.StreamRunLogsParams{LastEventID: ptr(strconv.FormatInt(total-1, 10))})
		if tail := sseLines(t, events, false); len(tail) != 1 || tail[0].Seq != total {
			t.Fatalf("resumed SSE of persisted lines = %v", events)
		}
	})
}

// sseLines decodes the log events of a stream; unless truncated is expected
// the stream must not carry a truncated event.
func sseLines(t *testing.T, events map[string][]string, truncated bool) []client.LogLine {
	t.Helper()
	if !truncated && len(events["truncated"]) > 0 {
		t.Fatalf("unexpected truncated event: %v", events["truncated"])
	}
	out := make([]client.LogLine, 0, len(events["log"]))
	for _, data := range events["log"] {
		var l client.LogLine
		if err := json.Unmarshal([]byte(data), &l); err != nil {
			t.Fatalf("log event %q: %v", data, err)
		}
		out = append(out, l)
	}
	for i := 1; i < len(out); i++ {
		if out[i].Seq != out[i-1].Seq+1 {
			t.Fatalf("log events out of sequence: %+v", out)
		}
	}
	return out
}

// logPage reads a page of a run's persisted lines with format=json.
func logPage(t *testing.T, s *server, id string, after int64) client.LogPage {
	t.Helper()
	f := client.StreamRunLogsParamsFormatJson
	resp, err := s.admin().StreamRunLogsWithResponse(context.Background(), id, &client.StreamRunLogsParams{Format: &f, After: &after})
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("logs format=json after %d: %v %d %s", after, err, resp.StatusCode(), resp.Body)
	}
	return *resp.JSON200
}

// rawLogs reads a run's persisted lines in format as sent, with their
// Content-Type.
func rawLogs(t *testing.T, s *server, id, format string) (body, contentType string) {
	t.Helper()
	f := client.StreamRunLogsParamsFormat(format)
	resp, err := s.admin().StreamRunLogs(context.Background(), id, &client.StreamRunLogsParams{Format: &f})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("logs format=%s: %d %v", format, resp.StatusCode, err)
	}
	return string(b), resp.Header.Get("Content-Type")
}
