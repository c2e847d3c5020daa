package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

const secretPassword = "hunter2-very-secret"

// gateConfig is a gate→jsonl pipeline with extra gate settings.
func gateConfig(path, extra string) string {
	return fmt.Sprintf("version: 1\nname: gate\npipeline:\n  source: {type: gate, config: {rows: 3, password: %q%s}}\n  sink: {type: jsonl, config: {path: %q}}\n", secretPassword, extra, path)
}

func TestDoctorFirstAndSecretRedaction(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		c := s.admin()
		ctx := context.Background()
		out := filepath.Join(t.TempDir(), "out.jsonl")

		failing := client.SubmitRequest{Config: gateConfig(out, ", fail_check: true"), DoctorFirst: ptr(true)}
		resp, err := c.SubmitRunWithResponse(ctx, nil, failing)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.ApplicationproblemJSON422
		if resp.StatusCode() != http.StatusUnprocessableEntity || p == nil || p.Error.Code != "unprocessable" || p.Error.Details == nil {
			t.Fatalf("doctor_first with a failing probe: %d %s", resp.StatusCode(), resp.Body)
		}
		if strings.Contains(string(resp.Body), secretPassword) || !strings.Contains(string(resp.Body), "[REDACTED]") {
			t.Fatalf("the 422 report must mask the secret: %s", resp.Body)
		}
		invs, _ := (*p.Error.Details)["invocations"].([]any)
		if len(invs) != 1 {
			t.Fatalf("report = %v", *p.Error.Details)
		}
		list, err := c.ListRunsWithResponse(ctx, nil)
		if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 0 {
			t.Fatalf("a rejected submission must record nothing: %v %s", err, list.Body)
		}

		// A passing doctor_first stores its report on the run.
		ok := s.submit(client.SubmitRequest{Config: gateConfig(out, ""), DoctorFirst: ptr(true)})
		rec := s.await(ok.RunId, client.RunStatusCompleted)
		if rec.DoctorReport == nil || !rec.DoctorReport.Ok || len(rec.DoctorReport.Invocations) != 1 || rec.RecordsWritten != 3 {
			t.Fatalf("run with doctor_first = %+v", rec)
		}

		// POST /v1/doctor probes without running.
		dr, err := c.RunDoctorWithResponse(ctx, client.DoctorRequest{Config: gateConfig(out, "")})
		if err != nil || dr.JSON200 == nil || !dr.JSON200.Ok {
			t.Fatalf("doctor: %v %d %s", err, dr.StatusCode(), dr.Body)
		}
		dr, err = c.RunDoctorWithResponse(ctx, client.DoctorRequest{Config: gateConfig(out, ", fail_check: true")})
		if err != nil || dr.StatusCode() != http.StatusUnprocessableEntity || strings.Contains(string(dr.Body), secretPassword) {
			t.Fatalf("doctor with a failing probe: %v %d %s", err, dr.StatusCode(), dr.Body)
		}

		// A connector error quoting the secret is masked in the record and
		// in the logs.
		bad := s.submit(client.SubmitRequest{Config: gateConfig(out, ", fail_read: true")})
		failed := s.await(bad.RunId, client.RunStatusFailed)
		if failed.Error == nil || strings.Contains(*failed.Error, secretPassword) || !strings.Contains(*failed.Error, "[REDACTED]") {
			t.Fatalf("failed run error = %v", deref(failed.Error))
		}
		lines := s.logs(bad.RunId, 0, 10000)
		joined := ""
		for _, l := range lines {
			joined += l.Line + "\n"
		}
		if strings.Contains(joined, secretPassword) || !strings.Contains(joined, "[REDACTED]") {
			t.Fatalf("run logs leak or lack the masked secret:\n%s", joined)
		}
		if strings.Contains(s.stderr.String(), secretPassword) {
			t.Fatal("the server log leaks the secret")
		}
	})
}

func TestRBACAndAudit(t *testing.T) {
	eachHistory(t, testRBACAndAudit)
}

func testRBACAndAudit(t *testing.T, h history) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.yaml")
	err := os.WriteFile(authFile, []byte(`principals:
  - {name: vera, token: "${env:VIEWER_TOKEN}", role: viewer}
  - {name: otto, token: operator-token-123, role: operator}
  - {name: ada, token: admin-token-456, role: admin}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, serverOpts{history: h.url(t), args: []string{"--auth-config", authFile}, env: []string{"VIEWER_TOKEN=viewer-token-789"}, token: "admin-token-456"})
	ctx := context.Background()
	viewer, operator, admin := s.client("viewer-token-789"), s.client("operator-token-123"), s.client("admin-token-456")
	out := filepath.Join(dir, "out.jsonl")

	// Unauthenticated: 401 with a challenge, whatever the route.
	for _, c := range []*client.ClientWithResponses{s.client(""), s.client("wrong-token")} {
		r, err := c.ListRunsWithResponse(ctx, nil)
		if err != nil || r.StatusCode() != http.StatusUnauthorized || r.ApplicationproblemJSON401 == nil ||
			r.ApplicationproblemJSON401.Error.Code != "unauthorized" || r.HTTPResponse.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("no/wrong token: %v %d %s", err, r.StatusCode(), r.Body)
		}
	}
	// Health, readiness and metrics are open.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		r, err := http.Get(s.url + path)
		if err != nil || r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", path, err, r)
		}
		r.Body.Close()
	}

	// The viewer reads but may not submit; the denial is audited.
	denied, err := viewer.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: generateToFile(1, out)})
	if err != nil || denied.StatusCode() != http.StatusForbidden || denied.ApplicationproblemJSON403 == nil ||
		denied.ApplicationproblemJSON403.Error.Code != "forbidden" {
		t.Fatalf("viewer submit: %v %d %s", err, denied.StatusCode(), denied.Body)
	}
	if r, err := viewer.ListRunsWithResponse(ctx, nil); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("viewer list: %v %d", err, r.StatusCode())
	}
	if r, err := viewer.ListAuditWithResponse(ctx, nil); err != nil || r.StatusCode() != http.StatusForbidden {
		t.Fatalf("viewer audit: %v %d", err, r.StatusCode())
	}
	if r, err := operator.ListAuditWithResponse(ctx, nil); err != nil || r.StatusCode() != http.StatusForbidden {
		t.Fatalf("operator audit: %v %d", err, r.StatusCode())
	}

	// The operator submits and cancels.
	sub, err := operator.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: generateToFile(4, out)})
	if err != nil || sub.JSON202 == nil {
		t.Fatalf("operator submit: %v %d %s", err, sub.StatusCode(), sub.Body)
	}
	s.await(sub.JSON202.RunId, client.RunStatusCompleted)

	for token, want := range map[string]string{"viewer-token-789": "vera/viewer", "operator-token-123": "otto/operator", "admin-token-456": "ada/admin"} {
		w, err := s.client(token).WhoamiWithResponse(ctx)
		if err != nil || w.JSON200 == nil || w.JSON200.Name+"/"+string(w.JSON200.Role) != want || !w.JSON200.AuthEnabled {
			t.Fatalf("whoami %s: %v %s", want, err, w.Body)
		}
	}

	// The admin reads the audit log: the denial and the submit are there.
	audit, err := admin.ListAuditWithResponse(ctx, nil)
	if err != nil || audit.JSON200 == nil {
		t.Fatalf("admin audit: %v %s", err, audit.Body)
	}
	var sawDenial, sawSubmit bool
	for _, e := range audit.JSON200.Entries {
		if e.Principal == "vera" && e.Role == client.Viewer && e.Action == "run.submit" && e.Result == client.Denied {
			sawDenial = true
		}
		if e.Principal == "otto" && e.Action == "run.submit" && e.Result == client.Ok && e.RunId != nil && *e.RunId == sub.JSON202.RunId &&
			e.ConfigFingerprint != nil && len(*e.ConfigFingerprint) == 64 && e.SourceIp != nil && *e.SourceIp == "127.0.0.1" {
			sawSubmit = true
		}
	}
	if !sawDenial || !sawSubmit {
		t.Fatalf("audit entries = %+v (denial %v, submit %v)", audit.JSON200.Entries, sawDenial, sawSubmit)
	}
	filtered, err := admin.ListAuditWithResponse(ctx, &client.ListAuditParams{Principal: ptr("vera")})
	if err != nil || filtered.JSON200 == nil {
		t.Fatal(err)
	}
	for _, e := range filtered.JSON200.Entries {
		if e.Principal != "vera" {
			t.Fatalf("principal filter returned %+v", e)
		}
	}
	if len(filtered.JSON200.Entries) == 0 {
		t.Fatal("principal filter returned nothing")
	}
	for _, tok := range []string{"viewer-token-789", "operator-token-123", "admin-token-456"} {
		if strings.Contains(s.stderr.String(), tok) || strings.Contains(string(audit.Body), tok) {
			t.Fatalf("token %s leaked into logs or audit", tok)
		}
	}
}

func TestBadRequests(t *testing.T) {
	eachHistory(t, testBadRequests)
}

func testBadRequests(t *testing.T, h history) {
	s := start(t, serverOpts{history: h.url(t), args: []string{"--body-limit-bytes", "2048"}})
	c := s.admin()
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "out.jsonl")

	big := generateToFile(1, out) + "# " + strings.Repeat("x", 4096) + "\n"
	r, err := c.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: big})
	if err != nil || r.StatusCode() != http.StatusRequestEntityTooLarge || r.ApplicationproblemJSON413 == nil ||
		r.ApplicationproblemJSON413.Error.Code != "payload_too_large" {
		t.Fatalf("oversized body: %v %d %s", err, r.StatusCode(), r.Body)
	}

	malformed := "version: 1\npipeline:\n  source: {type: generate, config: {count: 1}\n  sink: [unclosed\n"
	r, err = c.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: malformed})
	if err != nil || r.StatusCode() != http.StatusBadRequest || r.ApplicationproblemJSON400 == nil || r.ApplicationproblemJSON400.Error.Code != "bad_config" {
		t.Fatalf("malformed YAML: %v %d %s", err, r.StatusCode(), r.Body)
	}
	if msg := r.ApplicationproblemJSON400.Error.Message; !regexp.MustCompile(`line \d+`).MatchString(msg) || !regexp.MustCompile(`column \d+`).MatchString(msg) {
		t.Fatalf("malformed YAML error does not name line and column: %q", msg)
	}

	r, err = c.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: strings.Replace(generateToFile(1, out), "generate", "nosuchsource", 1)})
	if err != nil || r.StatusCode() != http.StatusBadRequest || !strings.Contains(r.ApplicationproblemJSON400.Error.Message, "generate") {
		t.Fatalf("unknown connector: %v %d %s", err, r.StatusCode(), r.Body)
	}

	r, err = c.SubmitRunWithBodyWithResponse(ctx, nil, "application/json", strings.NewReader(`{"config": `))
	if err != nil || r.StatusCode() != http.StatusBadRequest || problemOf(t, r.Body).Error.Code != "bad_config" {
		t.Fatalf("malformed JSON body: %v %d %s", err, r.StatusCode(), r.Body)
	}

	r, err = c.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: generateToFile(1, out), TimeoutSecs: ptr(int64(0))})
	if err != nil || r.StatusCode() != http.StatusUnprocessableEntity || r.ApplicationproblemJSON422 == nil {
		t.Fatalf("timeout_secs 0: %v %d %s", err, r.StatusCode(), r.Body)
	}

	list, err := c.ListRunsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 0 {
		t.Fatalf("bad input must record nothing: %v %s", err, list.Body)
	}

	// A malformed time filter is bad input: 400 naming the parameter. The
	// generated client only sends well-formed times, so these go raw.
	for _, path := range []string{"/v1/runs", "/v1/audit"} {
		for _, param := range []string{"since", "until"} {
			status, p := getProblem(t, s, path+"?"+param+"=yesterday")
			if status != http.StatusBadRequest || p.Error.Code != "bad_config" || !strings.Contains(p.Error.Message, param) ||
				!strings.Contains(p.Error.Message, `"yesterday"`) {
				t.Fatalf("GET %s?%s=yesterday: %d %+v", path, param, status, p)
			}
		}
		if status, p := getProblem(t, s, path+"?since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:00.5%2B01:00"); status != http.StatusOK {
			t.Fatalf("GET %s with well-formed times: %d %+v", path, status, p)
		}
	}
	sc, err := c.GetSchemaWithResponse(ctx, client.GetSchemaParamsKindSource, "generate")
	if err != nil || sc.JSON200 == nil {
		t.Fatalf("schema of generate: %v %d", err, sc.StatusCode())
	}
	if r, err := c.GetSchemaWithResponse(ctx, client.GetSchemaParamsKindSink, "nope"); err != nil || r.StatusCode() != http.StatusNotFound {
		t.Fatalf("schema of an unknown sink: %v %d", err, r.StatusCode())
	}
	cat, err := c.ListSchemasWithResponse(ctx)
	if err != nil || cat.JSON200 == nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, x := range cat.JSON200.Sources {
		names["source:"+x.Name] = true
	}
	for _, x := range cat.JSON200.Sinks {
		names["sink:"+x.Name] = true
	}
	for _, want := range []string{"source:generate", "source:gate", "sink:jsonl"} {
		if !names[want] {
			t.Fatalf("catalog lacks %s: %v", want, names)
		}
	}
}

// getProblem sends an admin GET of path and decodes a problem body when the
// answer is not 200.
func getProblem(t *testing.T, s *server, path string) (int, client.Problem) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, client.Problem{}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("GET %s: %d with Content-Type %q: %s", path, resp.StatusCode, ct, body)
	}
	return resp.StatusCode, problemOf(t, body)
}
