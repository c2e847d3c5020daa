package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// TestMCPConcurrentReplays: many callers submit the same run at once
// through MCP, over HTTP sessions of their own and over one faucet mcp
// session they share. One run is created, every caller is told its id, and
// its records are written once. Under -race the server and faucet mcp are
// built with the race detector, and both must end cleanly without a report.
func TestMCPConcurrentReplays(t *testing.T) {
	t.Parallel()
	s := start(t, serverOpts{token: mcpAdmin, args: []string{"--auth-config", mcpAuthFile(t), "--mcp", "--mcp-allow-mutations"}})
	out := filepath.Join(t.TempDir(), "once.jsonl")
	args := map[string]any{"config": generateToFile(3, out), "name": "once", "idempotency_key": "mcp-concurrent"}
	sessions := []mcpSession{stdioSession(t, s, mcpOperator, "--allow-mutations")}
	for range 4 {
		sessions = append(sessions, httpSession(t, s, mcpOperator))
	}

	type answer struct {
		text string
		err  error
	}
	const callsPerSession = 4
	answers := make(chan answer, len(sessions)*callsPerSession)
	var wg sync.WaitGroup
	for _, m := range sessions {
		for range callsPerSession {
			wg.Go(func() {
				res, err := m.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_pipeline", Arguments: args})
				if err == nil && res.IsError {
					err = &toolError{res}
				}
				var text string
				if err == nil {
					text = res.Content[0].(*sdk.TextContent).Text
				}
				answers <- answer{text, err}
			})
		}
	}
	wg.Wait()
	close(answers)
	ids := map[string]int{}
	for a := range answers {
		if a.err != nil {
			t.Fatalf("a concurrent run_pipeline: %v", a.err)
		}
		ids[runID(t, a.text)]++
	}
	if len(ids) != 1 {
		t.Fatalf("concurrent submissions with one idempotency key started %d runs: %v", len(ids), ids)
	}
	for id := range ids {
		if rec := sessions[0].awaitRun(t, id, client.RunStatusCompleted); rec.RecordsWritten != 3 {
			t.Fatalf("run = %+v", rec)
		}
	}
	list, err := s.client(mcpAdmin).ListRunsWithResponse(context.Background(), &client.ListRunsParams{Name: ptr("once")})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 1 {
		t.Fatalf("runs named once: %v %s", err, list.Body)
	}
	if b, err := os.ReadFile(out); err != nil || strings.Count(string(b), "\n") != 3 {
		t.Fatalf("the sink holds %q (%v), want 3 records", b, err)
	}
	s.stop()
	if s.waitErr != nil || strings.Contains(s.stderr.String(), "DATA RACE") {
		t.Fatalf("faucet serve ended with %v\n%s", s.waitErr, s.stderr.String())
	}
}

// toolError is a tool's error answer where a test wanted none.
type toolError struct{ res *sdk.CallToolResult }

func (e *toolError) Error() string {
	var b strings.Builder
	for _, c := range e.res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return "tool error: " + b.String()
}

// TestMCPFaults injects the faults the tools meet. A server started while
// its Postgres is down answers /mcp 503 unavailable until it reaches it.
// With the history's Postgres stopped later, the tools of /mcp answer the
// API's 503 unavailable as a tool error, a submission among them, and write
// nothing; when it is back the same session reads on, the run from before
// intact. With its server killed (SIGKILL), faucet mcp answers each call
// with a tool error saying the server did not answer, and lives on.
func TestMCPFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, err := testpg.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	// Durable commits, as on a production server: the throwaway server's
	// asynchronous ones could lose an acknowledged run to the stop.
	for _, stmt := range []string{"CREATE DATABASE mcp", "ALTER DATABASE mcp SET synchronous_commit = on", "CHECKPOINT"} {
		if err := execSQL(pg.URL(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	s := start(t, serverOpts{history: pg.DatabaseURL("mcp"), bin: fastBin, token: mcpAdmin, unready: true,
		args: []string{"--auth-config", mcpAuthFile(t), "--mcp", "--mcp-allow-mutations"}})
	resp, body := send(t, mcpRequest(t, s, mcpOperator, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"unavailable"`) {
		t.Fatalf("/mcp before the history is reached: %d %s", resp.StatusCode, body)
	}
	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	awaitHistory(t, s, client.ReadyStatusHistoryReady)
	dir := t.TempDir()
	m := httpSession(t, s, mcpOperator)
	stdio := stdioSession(t, s, mcpOperator)
	before := runID(t, m.ok(t, "run_pipeline", map[string]any{"config": generateToFile(2, filepath.Join(dir, "before.jsonl"))}, nil))
	m.awaitRun(t, before, client.RunStatusCompleted)

	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	during := filepath.Join(dir, "during.jsonl")
	m.refused(t, "run_pipeline", map[string]any{"config": generateToFile(2, during)}, "unavailable (503)")
	m.refused(t, "get_run", map[string]any{"run_id": before}, "unavailable (503)")
	m.refused(t, "list_runs", nil, "unavailable (503)")
	stdio.refused(t, "list_runs", nil, "unavailable (503)")
	if status, body := postMCP(t, s, mcpOperator, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_run_logs","arguments":{"run_id":"`+before+`"}}}`); status != http.StatusOK || !strings.Contains(body, "unavailable (503)") {
		t.Fatalf("get_run_logs with Postgres stopped: %d %s", status, body)
	}

	if err := pg.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	awaitHistory(t, s, client.ReadyStatusHistoryReady)
	var list client.ListResponse
	m.ok(t, "list_runs", nil, &list)
	if len(list.Runs) != 1 || list.Runs[0].RunId != before || list.Runs[0].Status != client.RunStatusCompleted {
		t.Fatalf("runs after the outage: %+v", list.Runs)
	}
	if _, err := os.Stat(during); !os.IsNotExist(err) {
		t.Fatalf("the refused submission wrote %s: %v", during, err)
	}

	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	for range 2 {
		stdio.refused(t, "list_runs", nil, "did not answer")
	}
	if got := len(stdio.tools(t)); got != len(mcpReadTools) {
		t.Fatalf("faucet mcp lists %d tools after its server died", got)
	}
}

// TestMCPCluster: the /mcp endpoint keeps no session, so any member of a
// cluster answers any call: a run submitted through one member's /mcp is
// followed through another's, and a bare tools/call that no initialize
// preceded is answered too.
func TestMCPCluster(t *testing.T) {
	t.Parallel()
	ms := startCluster(t, 2, testpg.Database(t), "--mcp", "--mcp-allow-mutations")
	first, second := httpSession(t, ms[0].server, adminToken), httpSession(t, ms[1].server, adminToken)
	id := runID(t, first.ok(t, "run_pipeline", map[string]any{"config": generateToFile(2, filepath.Join(t.TempDir(), "out.jsonl"))}, nil))
	if rec := second.awaitRun(t, id, client.RunStatusCompleted); rec.RecordsWritten != 2 {
		t.Fatalf("run = %+v", rec)
	}
	status, body := postMCP(t, ms[1].server, adminToken, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_run","arguments":{"run_id":"`+id+`"}}}`)
	if status != http.StatusOK || !strings.Contains(body, `\"run_id\":\"`+id) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("a bare get_run on the other member: %d %s", status, body)
	}
}
