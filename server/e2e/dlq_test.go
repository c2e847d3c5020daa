package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// countLines counts the non-empty lines of a file.
func countFileLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			n++
		}
	}
	return n
}

// TestDeadLetterQueue: a postgres sink with a unique constraint writes the
// 9,990 good rows of 10,000 and dead-letters the 10 duplicates; the
// letters are inspected, replayed (failing again into a fresh file until
// the table is fixed, then written), and discarded.
func TestDeadLetterQueue(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		root := realTempDir(t)
		authFile := filepath.Join(t.TempDir(), "auth.yaml")
		if err := os.WriteFile(authFile, []byte("principals:\n  - {name: otto, token: operator-token-123, role: operator}\n  - {name: vera, token: viewer-token-789, role: viewer}\n  - {name: ada, token: admin-token-456, role: admin}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		pg := testpg.Database(t)
		s := start(t, serverOpts{history: h.url(t), token: "admin-token-456", args: []string{"--auth-config", authFile, "--file-root", root, "--config-env", "PG_URL"},
			env: []string{"PG_URL=" + pg}})
		ctx := context.Background()
		operator, viewer := s.client("operator-token-123"), s.client("viewer-token-789")
		conn, err := pgx.Connect(ctx, pg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE people (id bigint PRIMARY KEY, name text)"); err != nil {
			t.Fatal(err)
		}
		var csv strings.Builder
		csv.WriteString("id,name\n")
		for i := range 10000 {
			id := i
			if i%1000 == 500 {
				id = i - 1 // the 10 duplicates
			}
			fmt.Fprintf(&csv, "%d,person %d\n", id, i)
		}
		if err := os.WriteFile(filepath.Join(root, "people.csv"), []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		config := `version: 1
name: people
pipeline:
  source: {type: csv, config: {path: people.csv}}
  sink: {type: postgres, config: {url: "${env:PG_URL}", table: people}}
resilience:
  dlq: {path: dead/people.jsonl}
  poison: {max_row_attempts: 2, action: dlq}
`
		id := s.submit(client.SubmitRequest{Config: config}).RunId
		rec := s.await(id, client.RunStatusCompleted)
		if rec.RecordsWritten != 9990 || deref64(rec.RecordsDeadLettered) != 10 || len(rec.Invocations) != 1 || deref64(rec.Invocations[0].RecordsDeadLettered) != 10 {
			t.Fatalf("run = %+v, want 9990 written and 10 dead-lettered", rec)
		}
		count := func() int {
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM people").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := count(); n != 9990 {
			t.Fatalf("the table holds %d rows, want 9990", n)
		}
		dead := filepath.Join(root, "dead", "people.jsonl")
		if n := countFileLines(t, dead); n != 10 {
			t.Fatalf("%d dead letters, want 10", n)
		}
		outs, err := viewer.ListLocalOutputsWithResponse(ctx, &client.ListLocalOutputsParams{RunId: &id})
		if err != nil || outs.JSON200 == nil || len(outs.JSON200.Outputs) != 1 || outs.JSON200.Outputs[0].Path != dead {
			t.Fatalf("the ledger of the run: %v %s", err, outs.Body)
		}

		// Inspect pages through the letters; viewers may.
		insp, err := viewer.InspectDLQWithResponse(ctx, client.DLQInspectRequest{Location: "dead/people.jsonl", Limit: ptr(int64(4))})
		if err != nil || insp.JSON200 == nil {
			t.Fatalf("inspect: %v %s", err, insp.Body)
		}
		sum := insp.JSON200
		if sum.TotalEnvelopes != 10 || sum.ByReason["partial"] != 10 || len(sum.Sample) != 4 || sum.NextOffset == nil || *sum.NextOffset != 4 {
			t.Fatalf("inspect = %+v", sum)
		}
		// A duplicate key fails every try, so it is tried once whatever
		// max_row_attempts says.
		letter := sum.Sample[0]
		if letter.ErrorMessage == nil || !strings.Contains(*letter.ErrorMessage, "duplicate key value violates unique constraint") ||
			deref(letter.RunId) != id || deref(letter.Connector) != "postgres" || letter.Attempt == nil || *letter.Attempt != 1 {
			t.Fatalf("a letter: %+v", letter)
		}
		last, _ := viewer.InspectDLQWithResponse(ctx, client.DLQInspectRequest{Location: dead, Limit: ptr(int64(4)), Offset: ptr(int64(8))})
		if last.JSON200 == nil || len(last.JSON200.Sample) != 2 || last.JSON200.NextOffset != nil {
			t.Fatalf("the last page: %s", last.Body)
		}

		// Replaying into the unfixed table fails again, into a fresh file.
		replay := func(c *client.ClientWithResponses, body client.DLQReplayRequest) *client.ReplayDLQResponse {
			t.Helper()
			r, err := c.ReplayDLQWithResponse(ctx, body)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		if r := replay(viewer, client.DLQReplayRequest{Config: config, From: dead}); r.StatusCode() != http.StatusForbidden {
			t.Fatalf("a viewer replaying: %d", r.StatusCode())
		}
		r := replay(operator, client.DLQReplayRequest{Config: config, From: dead})
		if r.JSON200 == nil || r.JSON200.Candidates != 10 || r.JSON200.RunId == nil || r.JSON200.FailedDlq != filepath.Join(root, "dead", "people.replay-failed.jsonl") {
			t.Fatalf("replay: %d %s", r.StatusCode(), r.Body)
		}
		again := s.await(*r.JSON200.RunId, client.RunStatusCompleted)
		if again.RecordsWritten != 0 || deref64(again.RecordsDeadLettered) != 10 || again.ReplayOf == nil || *again.ReplayOf != dead {
			t.Fatalf("the replay into the unfixed table: %+v", again)
		}
		if n := countFileLines(t, dead); n != 10 {
			t.Fatalf("the replayed file has %d letters now, want its 10", n)
		}
		if n := countFileLines(t, r.JSON200.FailedDlq); n != 10 {
			t.Fatalf("the fresh dead-letter file has %d letters, want 10", n)
		}

		// Fixed, the table takes them.
		if _, err := conn.Exec(ctx, "ALTER TABLE people DROP CONSTRAINT people_pkey"); err != nil {
			t.Fatal(err)
		}
		r = replay(operator, client.DLQReplayRequest{Config: config, From: "dead/people.jsonl", FailedDlq: ptr("dead/second.jsonl")})
		if r.JSON200 == nil || r.JSON200.RunId == nil {
			t.Fatalf("replay after the fix: %d %s", r.StatusCode(), r.Body)
		}
		fixed := s.await(*r.JSON200.RunId, client.RunStatusCompleted)
		if fixed.RecordsWritten != 10 || deref64(fixed.RecordsDeadLettered) != 0 {
			t.Fatalf("the replay after the fix: %+v", fixed)
		}
		if n := count(); n != 10000 {
			t.Fatalf("after the replay the table holds %d rows, want 10000", n)
		}
		if _, err := os.Stat(filepath.Join(root, "dead", "second.jsonl")); !os.IsNotExist(err) {
			t.Fatalf("a replay with no failure created its failures' file: %v", err)
		}

		// Bad input: a clear 400 naming the problem, nothing written.
		for _, bad := range []struct {
			what string
			body client.DLQReplayRequest
			want string
		}{
			{"a file that is not a dead-letter file", client.DLQReplayRequest{Config: config, From: "people.csv"}, "is not a dead-letter file"},
			{"a location outside the roots", client.DLQReplayRequest{Config: config, From: "/etc/passwd"}, "outside the file roots"},
			{"failures into the replayed file", client.DLQReplayRequest{Config: config, From: dead, FailedDlq: &dead}, "being replayed"},
			{"a row the config lacks", client.DLQReplayRequest{Config: config, From: dead, Row: ptr("nope")}, "the config has no matrix"},
		} {
			r := replay(operator, bad.body)
			if r.StatusCode() != http.StatusBadRequest || !strings.Contains(string(r.Body), bad.want) {
				t.Fatalf("%s: %d %s", bad.what, r.StatusCode(), r.Body)
			}
		}
		if ins, _ := viewer.InspectDLQWithResponse(ctx, client.DLQInspectRequest{Location: s.opts.dataDir + "/history.db"}); ins.StatusCode() != http.StatusBadRequest {
			t.Fatalf("inspecting a file outside the roots: %d %s", ins.StatusCode(), ins.Body)
		}
		if err := os.Mkdir(filepath.Join(root, "adir"), 0o755); err != nil {
			t.Fatal(err)
		}
		submitRefused(t, operator, "a dead-letter path that is a directory", strings.Replace(config, "dead/people.jsonl", "adir", 1), "adir", "is a directory")
		submitRefused(t, operator, "poison dlq without a dlq block", strings.Replace(config, "  dlq: {path: dead/people.jsonl}\n", "", 1), "resilience.poison", "needs a resilience.dlq block")
		submitRefused(t, operator, "a dead-letter path outside the roots", strings.Replace(config, "dead/people.jsonl", "/etc/dead.jsonl", 1), "/etc/dead.jsonl", "outside the file roots")

		// Discard archives the letters, and leaves the file's other lines.
		if f, err := os.OpenFile(dead, os.O_APPEND|os.O_WRONLY, 0); err == nil {
			f.WriteString("not a letter\n")
			f.Close()
		}
		if d, _ := viewer.DiscardDLQWithResponse(ctx, client.DLQDiscardRequest{Location: dead}); d.StatusCode() != http.StatusForbidden {
			t.Fatalf("a viewer discarding: %d", d.StatusCode())
		}
		d, err := operator.DiscardDLQWithResponse(ctx, client.DLQDiscardRequest{Location: dead})
		if err != nil || d.JSON200 == nil || d.JSON200.Discarded != 10 || d.JSON200.FilesRewritten != 1 ||
			len(d.JSON200.ArchivedTo) != 1 || d.JSON200.ArchivedTo[0] != filepath.Join(root, "dead", "people.archived.jsonl") {
			t.Fatalf("discard: %v %s", err, d.Body)
		}
		if b, _ := os.ReadFile(dead); string(b) != "not a letter\n" {
			t.Fatalf("after the discard the file holds %q", b)
		}
		if n := countFileLines(t, filepath.Join(root, "dead", "people.archived.jsonl")); n != 10 {
			t.Fatalf("the archive holds %d letters", n)
		}
		failed := filepath.Join(root, "dead", "people.replay-failed.jsonl")
		d, _ = operator.DiscardDLQWithResponse(ctx, client.DLQDiscardRequest{Location: failed, Delete: ptr(true)})
		if d.JSON200 == nil || d.JSON200.Discarded != 10 || len(d.JSON200.ArchivedTo) != 0 {
			t.Fatalf("discard with delete: %s", d.Body)
		}
		if b, err := os.ReadFile(failed); err != nil || len(b) != 0 {
			t.Fatalf("after deleting its letters the file holds %q (%v)", b, err)
		}

		audit, err := s.admin().ListAuditWithResponse(ctx, &client.ListAuditParams{})
		if err != nil || audit.JSON200 == nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range audit.JSON200.Entries {
			seen[e.Action+":"+string(e.Result)] = true
		}
		for _, want := range []string{"dlq.inspect:ok", "dlq.replay:ok", "dlq.replay:error", "dlq.replay:denied", "dlq.discard:ok", "dlq.discard:denied"} {
			if !seen[want] {
				t.Errorf("the audit log lacks %s: %v", want, seen)
			}
		}
	})
}

func deref64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
