package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// The tools of faucet serve --mcp and faucet mcp, read-only ones first.
var (
	mcpReadTools  = []string{"get_connector_schema", "get_run", "get_run_logs", "get_template", "list_connectors", "list_runs", "list_templates", "scaffold_config", "validate_config"}
	mcpWriteTools = []string{"delete_template", "deprecate_template", "launch_template", "promote_template", "register_template", "rollback_template", "run_pipeline", "run_template"}
)

// The principals of the MCP tests, one per role.
const (
	mcpViewer   = "viewer-token-789"
	mcpOperator = "operator-token-123"
	mcpAdmin    = "admin-token-456"
)

// mcpAuthFile writes an auth config with a principal per role.
func mcpAuthFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(file, []byte(`principals:
  - {name: vera, token: `+mcpViewer+`, role: viewer}
  - {name: otto, token: `+mcpOperator+`, role: operator}
  - {name: ada, token: `+mcpAdmin+`, role: admin}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// bearer sends a bearer token with every request of an MCP client.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession is an MCP client session of the SDK's own client.
type mcpSession struct {
	cs *sdk.ClientSession
}

// connect opens a session with a transport and closes it with the test.
func connect(t testing.TB, transport sdk.Transport) mcpSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "faucet-e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return mcpSession{cs: cs}
}

// httpSession opens a session with the /mcp endpoint of s as token.
func httpSession(t testing.TB, s *server, token string) mcpSession {
	t.Helper()
	return connect(t, &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}})
}

// tools lists the session's tools by name, sorted.
func (m mcpSession) tools(t *testing.T) map[string]*sdk.Tool {
	t.Helper()
	res, err := m.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

// call calls a tool and returns its result and the text of its content.
func (m mcpSession) call(t *testing.T, name string, args map[string]any) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := m.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

// ok calls a tool that must succeed and decodes its JSON answer into into
// (when not nil); it returns the answer's text.
func (m mcpSession) ok(t *testing.T, name string, args map[string]any, into any) string {
	t.Helper()
	res, text := m.call(t, name, args)
	if res.IsError {
		t.Fatalf("%s %v: tool error %s", name, args, text)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(text), into); err != nil {
			t.Fatalf("%s: answer %q: %v", name, text, err)
		}
	}
	return text
}

// refused calls a tool that must answer a tool error saying every word.
func (m mcpSession) refused(t *testing.T, name string, args map[string]any, words ...string) string {
	t.Helper()
	res, text := m.call(t, name, args)
	if !res.IsError {
		t.Fatalf("%s %v: want a tool error, got %s", name, args, text)
	}
	for _, w := range words {
		if !strings.Contains(text, w) {
			t.Fatalf("%s %v: the error does not say %q: %s", name, args, w, text)
		}
	}
	return text
}

// awaitRun follows a run through get_run until it is in status want.
func (m mcpSession) awaitRun(t *testing.T, id string, want client.RunStatus) client.RunRecord {
	t.Helper()
	var rec client.RunRecord
	testwait.Until(t, 2*time.Minute, func() error {
		m.ok(t, "get_run", map[string]any{"run_id": id}, &rec)
		if rec.Status == want {
			return nil
		}
		if isTerminal(rec.Status) {
			t.Fatalf("run %s is %s (error %s), want %s", id, rec.Status, deref(rec.Error), want)
		}
		return fmt.Errorf("run %s is %s, want %s", id, rec.Status, want)
	})
	return rec
}

// runID reads the run_id of a submission's answer.
func runID(t *testing.T, text string) string {
	t.Helper()
	var sub client.SubmitResponse
	if err := json.Unmarshal([]byte(text), &sub); err != nil || sub.RunId == "" {
		t.Fatalf("not a submission: %s (%v)", text, err)
	}
	return sub.RunId
}

// mcpRequest is a raw JSON-RPC message to the /mcp endpoint of s as token
// (none when empty).
func mcpRequest(t *testing.T, s *server, token, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// postMCP posts a raw JSON-RPC message to the /mcp endpoint of s as token
// and returns the status and body of the answer.
func postMCP(t *testing.T, s *server, token, body string) (int, string) {
	t.Helper()
	resp, out := send(t, mcpRequest(t, s, token, body))
	return resp.StatusCode, out
}

func names(tools map[string]*sdk.Tool) []string {
	var out []string
	for n := range tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestMCPEndpoint drives faucet serve --mcp --mcp-allow-mutations with the
// SDK's own client, as each role: the tools, what each answers, the
// refusals the API decides, the bounds, the secrets kept out, and the
// audit entries of every call.
func TestMCPEndpoint(t *testing.T) {
	eachHistory(t, testMCPEndpoint)
}

func testMCPEndpoint(t *testing.T, h history) {
	const bodyLimit = 256 << 10
	s := start(t, serverOpts{history: h.url(t), token: mcpAdmin, args: []string{
		"--auth-config", mcpAuthFile(t), "--mcp", "--mcp-allow-mutations", "--body-limit-bytes", fmt.Sprint(bodyLimit),
	}})
	dir := t.TempDir()
	viewer, operator, admin := httpSession(t, s, mcpViewer), httpSession(t, s, mcpOperator), httpSession(t, s, mcpAdmin)

	t.Run("Unauthenticated", func(t *testing.T) {
		for _, token := range []string{"", "wrong-token"} {
			resp, body := send(t, mcpRequest(t, s, token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			var p client.Problem
			err := json.Unmarshal([]byte(body), &p)
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="faucet"` ||
				err != nil || p.Error.Code != "unauthorized" || deref(p.Instance) != "/mcp" {
				t.Fatalf("token %q: %d %v %s", token, resp.StatusCode, err, body)
			}
		}
		c := sdk.NewClient(&sdk.Implementation{Name: "faucet-e2e", Version: "1"}, nil)
		if cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{
			Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer("wrong-token")},
		}, nil); err == nil {
			cs.Close()
			t.Fatal("a session with a wrong token was initialized")
		}
	})

	t.Run("Initialize", func(t *testing.T) {
		init := admin.cs.InitializeResult()
		if init.ServerInfo.Name != "faucet" || init.Capabilities.Tools == nil || !strings.Contains(init.Instructions, "run_pipeline") {
			t.Fatalf("initialize = %+v", init)
		}
		tools := viewer.tools(t)
		if got, want := names(tools), slices.Sorted(slices.Values(append(slices.Clone(mcpReadTools), mcpWriteTools...))); !slices.Equal(got, want) {
			t.Fatalf("tools = %v, want %v", got, want)
		}
		for _, n := range mcpReadTools {
			if a := tools[n].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("%s is not marked read-only", n)
			}
		}
		for _, n := range mcpWriteTools {
			if a := tools[n].Annotations; a == nil || a.ReadOnlyHint {
				t.Errorf("%s is marked read-only", n)
			}
		}
		if a := tools["delete_template"].Annotations; a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Error("delete_template is not marked destructive")
		}
	})

	t.Run("Connectors", func(t *testing.T) {
		var cat map[string][]client.ConnectorSummary
		viewer.ok(t, "list_connectors", map[string]any{"kind": "source"}, &cat)
		if _, sinks := cat["sinks"]; sinks || !slices.ContainsFunc(cat["sources"], func(c client.ConnectorSummary) bool { return c.Name == "gate" }) {
			t.Fatalf("list_connectors kind=source: %v", cat)
		}
		viewer.ok(t, "list_connectors", nil, &cat)
		if len(cat["sources"]) == 0 || len(cat["sinks"]) == 0 {
			t.Fatalf("list_connectors: %v", cat)
		}
		var schema struct {
			Properties map[string]struct {
				WriteOnly bool `json:"writeOnly"`
			} `json:"properties"`
		}
		viewer.ok(t, "get_connector_schema", map[string]any{"kind": "source", "name": "gate"}, &schema)
		if !schema.Properties["password"].WriteOnly {
			t.Fatalf("gate's schema: %+v", schema)
		}
		viewer.refused(t, "get_connector_schema", map[string]any{"kind": "sink", "name": "no-such"}, "not_found (404)")
		viewer.refused(t, "get_connector_schema", map[string]any{"kind": "table", "name": "gate"}, "kind")

		_, yaml := viewer.call(t, "scaffold_config", map[string]any{"source": "gate", "sink": "jsonl", "name": "starter"})
		for _, want := range []string{"name: \"starter\"", "type: gate", "type: jsonl", "${env:GATE_PASSWORD}", "validate_config"} {
			if !strings.Contains(yaml, want) {
				t.Fatalf("scaffold_config does not say %q:\n%s", want, yaml)
			}
		}
		viewer.refused(t, "scaffold_config", map[string]any{"source": "jsonl", "sink": "nope"}, "not_found (404)")
	})

	t.Run("ValidateAndRun", func(t *testing.T) {
		out := filepath.Join(dir, "run.jsonl")
		var v struct {
			Valid  bool                `json:"valid"`
			Report client.DoctorReport `json:"report"`
		}
		operator.ok(t, "validate_config", map[string]any{"config": generateToFile(5, out)}, &v)
		if !v.Valid || !v.Report.Ok {
			t.Fatalf("validate_config = %+v", v)
		}
		operator.refused(t, "validate_config", map[string]any{"config": "version: 1\npipeline: {source: [unclosed\n"}, "bad_config (400)", "line 2")
		operator.refused(t, "validate_config", map[string]any{"config": gateConfig(out, ", fail_check: true")}, "unprocessable (422)", "invocations")
		operator.ok(t, "run_pipeline", map[string]any{"config": generateToFile(5, out), "dry_run": true}, &v)
		if !v.Valid {
			t.Fatalf("dry run = %+v", v)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("the dry run wrote %s: %v", out, err)
		}

		id := runID(t, operator.ok(t, "run_pipeline", map[string]any{
			"config": generateToFile(5, out), "name": "from-mcp", "labels": map[string]any{"via": "mcp"}, "idempotency_key": "mcp-1",
		}, nil))
		rec := operator.awaitRun(t, id, client.RunStatusCompleted)
		if rec.RecordsWritten != 5 || deref(rec.Name) != "from-mcp" || rec.Labels["via"] != "mcp" {
			t.Fatalf("run = %+v", rec)
		}
		if again := runID(t, operator.ok(t, "run_pipeline", map[string]any{
			"config": generateToFile(5, out), "name": "from-mcp", "labels": map[string]any{"via": "mcp"}, "idempotency_key": "mcp-1",
		}, nil)); again != id {
			t.Fatalf("a replay started run %s, want %s", again, id)
		}

		var page struct {
			Lines     []client.LogLine `json:"lines"`
			NextAfter int64            `json:"next_after"`
		}
		testwait.Until(t, time.Minute, func() error {
			viewer.ok(t, "get_run_logs", map[string]any{"run_id": id, "limit": 2}, &page)
			if len(page.Lines) == 2 && page.NextAfter == page.Lines[1].Seq {
				return nil
			}
			return fmt.Errorf("get_run_logs = %+v", page)
		})
		var rest struct {
			Lines []client.LogLine `json:"lines"`
		}
		viewer.ok(t, "get_run_logs", map[string]any{"run_id": id, "after": page.NextAfter}, &rest)
		if len(rest.Lines) == 0 || rest.Lines[0].Seq <= page.NextAfter {
			t.Fatalf("the next page: %+v", rest)
		}
		viewer.refused(t, "get_run_logs", map[string]any{"run_id": id, "limit": 5000}, "limit")
		viewer.refused(t, "get_run", map[string]any{"run_id": "no-such-run"}, "not_found (404)")

		var list client.ListResponse
		viewer.ok(t, "list_runs", map[string]any{"status": []any{"completed"}, "name": "from-mcp", "limit": 10}, &list)
		if len(list.Runs) != 1 || list.Runs[0].RunId != id {
			t.Fatalf("list_runs = %+v", list)
		}
		viewer.refused(t, "list_runs", map[string]any{"since": "yesterday"}, "since", "RFC 3339")
		viewer.refused(t, "list_runs", map[string]any{"status": []any{"finished"}}, "status")
	})

	t.Run("Secrets", func(t *testing.T) {
		out := filepath.Join(dir, "secret.jsonl")
		id := runID(t, operator.ok(t, "run_pipeline", map[string]any{"config": gateConfig(out, ", fail_read: true")}, nil))
		rec := operator.awaitRun(t, id, client.RunStatusFailed)
		_, text := operator.call(t, "get_run", map[string]any{"run_id": id})
		if !strings.Contains(text, "[REDACTED]") || strings.Contains(text, secretPassword) || rec.Error == nil {
			t.Fatalf("get_run of a run whose error quoted the secret: %s", text)
		}
		for tool, args := range map[string]map[string]any{"get_run_logs": {"run_id": id}, "list_runs": nil} {
			if _, text := operator.call(t, tool, args); strings.Contains(text, secretPassword) {
				t.Fatalf("%s shows the secret: %s", tool, text)
			}
		}
		if text := operator.refused(t, "validate_config", map[string]any{"config": gateConfig(out, ", fail_check: true")}, "unprocessable"); strings.Contains(text, secretPassword) {
			t.Fatalf("validate_config shows the secret: %s", text)
		}
	})

	t.Run("Templates", func(t *testing.T) {
		tdir := t.TempDir()
		cfg := templateConfig(tdir)
		var reg client.TemplateSummary
		operator.ok(t, "register_template", map[string]any{"config": cfg, "tags": []any{"dev"}, "description": "sync one tenant"}, &reg)
		if reg.Id != "tenant-sync" || reg.Version != 1 {
			t.Fatalf("register_template = %+v", reg)
		}
		var listed client.TemplateList
		viewer.ok(t, "list_templates", nil, &listed)
		if len(listed.Templates) != 1 || listed.Templates[0].Id != "tenant-sync" {
			t.Fatalf("list_templates = %+v", listed)
		}
		viewer.refused(t, "get_template", map[string]any{"id": "tenant-sync"}, "conflict (409)")
		if text := viewer.ok(t, "get_template", map[string]any{"id": "tenant-sync", "version": "newest"}, nil); !strings.Contains(text, "${param.tenant}") {
			t.Fatalf("get_template has no body: %s", text)
		}
		operator.ok(t, "launch_template", map[string]any{"id": "tenant-sync"}, nil)
		operator.ok(t, "register_template", map[string]any{"config": cfg, "id": "tenant-sync", "launch": true}, nil)
		var rolled struct {
			Version int `json:"version"`
		}
		operator.ok(t, "rollback_template", map[string]any{"id": "tenant-sync"}, &rolled)
		if rolled.Version != 1 {
			t.Fatalf("rollback_template = %+v", rolled)
		}
		operator.ok(t, "promote_template", map[string]any{"id": "tenant-sync", "tag": "prod", "version": 2}, nil)
		operator.refused(t, "promote_template", map[string]any{"id": "tenant-sync", "tag": "stable", "version": 1}, "tag")

		text := operator.ok(t, "run_template", map[string]any{"id": "tenant-sync", "version": "prod", "params": map[string]any{
			"tenant": "acme", "count": 4, "token": templateSecret,
		}}, nil)
		if strings.Contains(text, templateSecret) {
			t.Fatalf("run_template shows the secret param: %s", text)
		}
		rec := operator.awaitRun(t, runID(t, text), client.RunStatusCompleted)
		if rec.RecordsWritten != 4 || deref(rec.TemplateId) != "tenant-sync" || rec.TemplateVersion == nil || *rec.TemplateVersion != 2 {
			t.Fatalf("templated run = %+v", rec)
		}
		operator.refused(t, "run_template", map[string]any{"id": "tenant-sync", "params": map[string]any{"count": 1}}, "bad_config (400)", "tenant")
		operator.refused(t, "run_template", map[string]any{"id": "tenant-sync", "params": map[string]any{"tenant": "a"}, "env": map[string]any{"X": "1"}}, "unprocessable (422)")

		operator.ok(t, "deprecate_template", map[string]any{"id": "tenant-sync", "version": 2, "reason": "too slow"}, nil)
		operator.refused(t, "run_template", map[string]any{"id": "tenant-sync", "version": 2, "params": map[string]any{"tenant": "a"}}, "conflict (409)", "too slow")
		operator.ok(t, "deprecate_template", map[string]any{"id": "tenant-sync", "version": 2, "undo": true}, nil)
		operator.ok(t, "delete_template", map[string]any{"id": "tenant-sync", "version": 2}, nil)
		operator.ok(t, "delete_template", map[string]any{"id": "tenant-sync"}, nil)
		viewer.refused(t, "get_template", map[string]any{"id": "tenant-sync"}, "not_found (404)")
	})

	t.Run("RBAC", func(t *testing.T) {
		out := filepath.Join(dir, "rbac.jsonl")
		viewer.refused(t, "run_pipeline", map[string]any{"config": generateToFile(1, out)}, "forbidden (403)", "vera", "operator")
		viewer.refused(t, "validate_config", map[string]any{"config": generateToFile(1, out)}, "forbidden (403)")
		viewer.refused(t, "register_template", map[string]any{"config": templateConfig(dir)}, "forbidden (403)")
		viewer.refused(t, "run_template", map[string]any{"id": "tenant-sync"}, "forbidden (403)")
		viewer.refused(t, "delete_template", map[string]any{"id": "tenant-sync"}, "forbidden (403)")
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("a refused run wrote %s", out)
		}
		admin.ok(t, "validate_config", map[string]any{"config": generateToFile(1, out)}, nil)
	})

	t.Run("Bounds", func(t *testing.T) {
		big := strings.Repeat("#", bodyLimit)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": "validate_config", "arguments": map[string]any{"config": big}}})
		if status, _ := postMCP(t, s, mcpOperator, string(body)); status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a request past --body-limit-bytes: %d", status)
		}
		labels := map[string]any{}
		for i := range 65 {
			labels[fmt.Sprint("k", i)] = "v"
		}
		operator.refused(t, "run_pipeline", map[string]any{"config": generateToFile(1, filepath.Join(dir, "b.jsonl")), "labels": labels}, "labels")
		operator.refused(t, "run_pipeline", map[string]any{"config": "version: 1", "shell": "rm -rf /"}, "shell")
		operator.refused(t, "get_run", map[string]any{"run_id": strings.Repeat("r", 200)}, "run_id")
		operator.refused(t, "get_run", map[string]any{"run_id": "bad\x00id"}, "bad_config (400)", "NUL")
	})

	t.Run("OtherHostName", func(t *testing.T) {
		// What a DNS-rebinding web page sends: a loopback address, another name.
		req := mcpRequest(t, s, mcpAdmin, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		req.Host = "attacker.example"
		if resp, body := send(t, req); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("Host attacker.example on a loopback address: %d %s", resp.StatusCode, body)
		}
	})

	t.Run("HostileMessages", func(t *testing.T) {
		// Whatever the arguments, every tool answers (null ones are no
		// arguments; the rest are refused), and the server lives on.
		for _, tool := range append(slices.Clone(mcpReadTools), mcpWriteTools...) {
			for _, args := range []string{`null`, `[]`, `"x"`, `{"x": 1}`, `{"id": {"$ne": 1}, "run_id": [1], "config": 7}`} {
				status, out := postMCP(t, s, mcpViewer, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`)
				refused := strings.Contains(out, `"isError":true`) || strings.Contains(out, `"error":`)
				if status != http.StatusOK || !strings.HasPrefix(out, `{"jsonrpc":"2.0","id":9,`) || args != `null` && !refused {
					t.Fatalf("%s with arguments %s: %d %s", tool, args, status, out)
				}
			}
		}
		for _, msg := range []string{`{`, `[]`, `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`} {
			if status, out := postMCP(t, s, mcpViewer, msg); status == http.StatusInternalServerError {
				t.Fatalf("%s: %d %s", msg, status, out)
			}
		}
		// Nesting is bounded before it costs: a deep argument is refused whole.
		deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
		if status, out := postMCP(t, s, mcpViewer, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_runs","arguments":{"status":`+deep+`}}}`); status != http.StatusBadRequest || !strings.Contains(out, "nesting depth") {
			t.Fatalf("an argument nested 100000 deep: %d %.300s", status, out)
		}
		viewer.ok(t, "list_runs", map[string]any{"limit": 1}, nil)
	})

	t.Run("Audit", func(t *testing.T) {
		resp, err := s.client(mcpAdmin).ListAuditWithResponse(context.Background(), &client.ListAuditParams{Limit: ptr(int64(1000))})
		if err != nil || resp.JSON200 == nil {
			t.Fatalf("audit: %v %s", err, resp.Body)
		}
		has := func(principal, action string, result client.AuditEntryResult, runID bool) bool {
			return slices.ContainsFunc(resp.JSON200.Entries, func(e client.AuditEntry) bool {
				return e.Principal == principal && e.Action == action && e.Result == result && (!runID || e.RunId != nil) &&
					e.SourceIp != nil && *e.SourceIp == "127.0.0.1"
			})
		}
		for _, want := range []struct {
			principal, action string
			result            client.AuditEntryResult
			runID             bool
		}{
			{"vera", "mcp.list_connectors", client.Ok, false},
			{"vera", "mcp.get_run", client.Ok, true},
			{"otto", "mcp.run_pipeline", client.Ok, true},
			{"otto", "run.submit", client.Ok, true},
			{"otto", "mcp.run_template", client.Ok, true},
			{"otto", "template.run", client.Ok, true},
			{"otto", "mcp.register_template", client.Ok, false},
			{"otto", "template.register", client.Ok, false},
			{"vera", "mcp.run_pipeline", client.Denied, false},
			{"vera", "run.submit", client.Denied, false},
			{"vera", "mcp.validate_config", client.Denied, false},
			{"ada", "mcp.validate_config", client.Ok, false},
			{"ada", "doctor", client.Ok, false},
		} {
			if !has(want.principal, want.action, want.result, want.runID) {
				t.Errorf("no audit entry %+v among %d", want, len(resp.JSON200.Entries))
			}
		}
		for _, secret := range []string{mcpViewer, mcpOperator, mcpAdmin, secretPassword, templateSecret} {
			if strings.Contains(s.stderr.String(), secret) || strings.Contains(string(resp.Body), secret) {
				t.Fatalf("%s leaked into the server's log or the audit log", secret)
			}
		}
	})
}

// TestMCPReadOnlyEndpoint: faucet serve --mcp alone lists the read-only
// tools only, to every role, and answers a call of a mutating one with a
// tool error saying how to allow it, which the audit log records as
// denied. A call whose arguments its schema refuses is recorded nowhere.
func TestMCPReadOnlyEndpoint(t *testing.T) {
	t.Parallel()
	s := start(t, serverOpts{token: mcpAdmin, args: []string{"--auth-config", mcpAuthFile(t), "--mcp"}})
	for _, token := range []string{mcpViewer, mcpAdmin} {
		m := httpSession(t, s, token)
		if got := names(m.tools(t)); !slices.Equal(got, mcpReadTools) {
			t.Fatalf("tools = %v, want %v", got, mcpReadTools)
		}
		for _, tool := range mcpWriteTools {
			m.refused(t, tool, map[string]any{"id": "x", "config": "version: 1"}, "read-only", "--mcp-allow-mutations")
		}
		m.ok(t, "list_runs", nil, nil)
		m.refused(t, "get_template", map[string]any{"id": ""}, "id")
	}
	resp, err := s.client(mcpAdmin).ListRunsWithResponse(context.Background(), nil)
	if err != nil || resp.JSON200 == nil || len(resp.JSON200.Runs) != 0 {
		t.Fatalf("a read-only endpoint started a run: %v %s", err, resp.Body)
	}
	audit, err := s.client(mcpAdmin).ListAuditWithResponse(context.Background(), &client.ListAuditParams{Limit: ptr(int64(1000))})
	if err != nil || audit.JSON200 == nil {
		t.Fatalf("audit: %v %s", err, audit.Body)
	}
	recorded := map[string]client.AuditEntryResult{}
	for _, e := range audit.JSON200.Entries {
		recorded[e.Principal+" "+e.Action] = e.Result
	}
	for _, who := range []string{"vera", "ada"} {
		for _, tool := range mcpWriteTools {
			if got := recorded[who+" mcp."+tool]; got != client.Denied {
				t.Errorf("%s's %s refused as read-only: audit result %q, want denied", who, tool, got)
			}
		}
		if got, ok := recorded[who+" mcp.list_runs"]; got != client.Ok {
			t.Errorf("%s's list_runs: audit result %q (%v), want ok", who, got, ok)
		}
		if got, ok := recorded[who+" mcp.get_template"]; ok {
			t.Errorf("%s's get_template with arguments its schema refuses was audited: %q", who, got)
		}
	}
}

// stdioSession starts faucet mcp with args, driving s as token, and opens
// a session with it over its standard input and output. The session ends
// with the test, and faucet mcp must then exit 0 and, built with the race
// detector, report no race.
func stdioSession(t testing.TB, s *server, token string, args ...string) mcpSession {
	t.Helper()
	cmd := exec.Command(faucetBin, append([]string{"mcp"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAUCET_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "FAUCET_SERVER="+s.url, "FAUCET_TOKEN="+token)
	// Written by the process's copier until it exits; read after Close,
	// which waits for the exit.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "faucet-e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to faucet mcp: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil || strings.Contains(stderr.String(), "DATA RACE") {
			t.Errorf("faucet mcp ended with %v\n%s", err, stderr.String())
		}
	})
	return mcpSession{cs: cs}
}

// TestMCPStdio drives faucet mcp with the SDK's command transport against a
// real faucet serve, which decides every call with the token faucet mcp
// sends. That server runs without --mcp, so it has no /mcp endpoint.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	s := start(t, serverOpts{token: mcpAdmin, args: []string{"--auth-config", mcpAuthFile(t)}})
	dir := t.TempDir()

	t.Run("NoEndpointByDefault", func(t *testing.T) {
		if status, _ := call(t, s, mcpAdmin, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != http.StatusNotFound {
			t.Fatalf("POST /mcp without --mcp: %d", status)
		}
		if r := cli(t, t.TempDir(), nil, "serve", "--mcp-allow-mutations"); r.code != 2 || !strings.Contains(r.stderr, "pass --mcp too") {
			t.Fatalf("serve --mcp-allow-mutations without --mcp: exit %d\n%s", r.code, r.stderr)
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		m := stdioSession(t, s, mcpOperator)
		if got := names(m.tools(t)); !slices.Equal(got, mcpReadTools) {
			t.Fatalf("tools = %v, want %v", got, mcpReadTools)
		}
		var cat map[string][]client.ConnectorSummary
		m.ok(t, "list_connectors", nil, &cat)
		if !slices.ContainsFunc(cat["sources"], func(c client.ConnectorSummary) bool { return c.Name == "gate" }) {
			t.Fatalf("list_connectors = %v", cat)
		}
		m.refused(t, "run_pipeline", map[string]any{"config": generateToFile(1, filepath.Join(dir, "ro.jsonl"))}, "read-only", "--allow-mutations")
	})

	t.Run("Pipe", func(t *testing.T) {
		// Requests written and standard input closed, as a script does:
		// every request is answered before faucet mcp exits 0, and a line
		// that is no message is answered with an error, not the end.
		cmd := exec.Command(faucetBin, "mcp", "--server", s.url, "--token", mcpViewer)
		cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{not json
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_connector_schema","arguments":{"kind":"source","name":"gate"}}}
`)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("faucet mcp: %v\n%s", err, stderr.String())
		}
		answered, parseErrors := map[float64]string{}, 0
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var msg struct {
				ID     *float64        `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			switch err := json.Unmarshal([]byte(line), &msg); {
			case err == nil && msg.ID == nil && msg.Error != nil && msg.Error.Code == -32700:
				parseErrors++
			case err != nil || msg.ID == nil || msg.Result == nil:
				t.Fatalf("an answer that is no result: %s (%v)", line, err)
			default:
				answered[*msg.ID] = string(msg.Result)
			}
		}
		if len(answered) != 3 || parseErrors != 1 || !strings.Contains(answered[2], "list_connectors") || !strings.Contains(answered[3], "writeOnly") {
			t.Fatalf("answers: %v", answered)
		}
	})

	t.Run("Mutations", func(t *testing.T) {
		out := filepath.Join(dir, "stdio.jsonl")
		stdioSession(t, s, mcpViewer, "--allow-mutations").refused(t, "run_pipeline", map[string]any{"config": generateToFile(3, out)}, "forbidden (403)", "vera")
		stdioSession(t, s, "wrong-token", "--allow-mutations").refused(t, "list_runs", nil, "unauthorized (401)")
		m := stdioSession(t, s, mcpOperator, "--allow-mutations")
		if got := len(m.tools(t)); got != len(mcpReadTools)+len(mcpWriteTools) {
			t.Fatalf("%d tools with --allow-mutations", got)
		}
		id := runID(t, m.ok(t, "run_pipeline", map[string]any{"config": generateToFile(3, out)}, nil))
		if rec := m.awaitRun(t, id, client.RunStatusCompleted); rec.RecordsWritten != 3 {
			t.Fatalf("run = %+v", rec)
		}
		audit, err := s.client(mcpAdmin).ListAuditWithResponse(context.Background(), &client.ListAuditParams{Principal: ptr("otto"), Action: ptr("run.submit")})
		if err != nil || audit.JSON200 == nil || len(audit.JSON200.Entries) != 1 || deref(audit.JSON200.Entries[0].RunId) != id {
			t.Fatalf("the server's audit of the submit: %v %s", err, audit.Body)
		}
	})
}
