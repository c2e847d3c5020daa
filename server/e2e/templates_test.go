package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// templateSecret is a secret param's value: no response, record, log or
// audit entry may show it.
const templateSecret = "tpl-secret-0451-do-not-store"

// templateConfig is a template writing count generated rows to
// dir/TENANT/TOKEN/rows.jsonl: the secret param goes into a value no
// connector marks secret, so only faucet's own masking keeps it out of
// the errors that name the path.
func templateConfig(dir string) string {
	return fmt.Sprintf(`version: 1
name: Tenant Sync
params:
  tenant: {required: true, description: Tenant to sync}
  count: {type: int, default: 3}
  token: {secret: true, default: "none"}
pipeline:
  source: {type: generate, config: {count: "${param.count}"}}
  sink: {type: jsonl, config: {path: "%s/${param.tenant}/${param.token}/rows.jsonl"}}
`, dir)
}

// call sends a JSON request with token and returns the status and body.
func call(t *testing.T, s *server, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, out := send(t, req)
	return resp.StatusCode, []byte(out)
}

// want calls and fails t unless the status is want; it decodes a body
// into into when into is not nil.
func want(t *testing.T, s *server, token, method, path string, body any, status int, into any) []byte {
	t.Helper()
	got, out := call(t, s, token, method, path, body)
	if got != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, got, out, status)
	}
	if into != nil {
		if err := json.Unmarshal(out, into); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, out)
		}
	}
	return out
}

// wantTemplateProblem calls and fails t unless the answer is a problem of status
// and code whose message holds every one of says.
func wantTemplateProblem(t *testing.T, s *server, token, method, path string, body any, status int, code string, says ...string) client.Problem {
	t.Helper()
	out := want(t, s, token, method, path, body, status, nil)
	p := problemOf(t, out)
	if string(p.Error.Code) != code {
		t.Fatalf("%s %s: code %s, want %s: %s", method, path, p.Error.Code, code, out)
	}
	for _, say := range says {
		if !strings.Contains(p.Error.Message, say) {
			t.Fatalf("%s %s: message %q does not say %q", method, path, p.Error.Message, say)
		}
	}
	return p
}

func TestTemplates(t *testing.T) {
	eachHistory(t, testTemplates)
}

func testTemplates(t *testing.T, h history) {
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.yaml")
	if err := os.WriteFile(authFile, []byte(`principals:
  - {name: vera, token: viewer-token-789, role: viewer}
  - {name: otto, token: operator-token-123, role: operator}
  - {name: ada, token: admin-token-456, role: admin}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, serverOpts{history: h.url(t), args: []string{"--auth-config", authFile}, token: "admin-token-456"})
	const viewer, operator, admin = "viewer-token-789", "operator-token-123", "admin-token-456"
	out := t.TempDir()
	cfg := templateConfig(out)

	t.Run("BadInputWritesNothing", func(t *testing.T) {
		reg := func(body any, status int, code string, says ...string) client.Problem {
			t.Helper()
			return wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates", body, status, code, says...)
		}
		reg(`{"config": `, http.StatusBadRequest, "bad_config")
		p := reg(map[string]any{"config": "version: 1\npipeline: {source: [unclosed\n"}, http.StatusBadRequest, "bad_config", "line 2")
		if p.Error.Details == nil {
			t.Fatalf("a syntax error without details: %+v", p)
		}
		p = reg(map[string]any{"config": strings.Replace(cfg, "type: int", "type: integer", 1)}, http.StatusBadRequest, "bad_config", "params.count.type")
		errs, _ := (*p.Error.Details)["errors"].([]any)
		if first, _ := errs[0].(map[string]any); len(errs) != 1 || first["path"] != "params.count.type" || first["line"] != 5.0 {
			t.Fatalf("problem details %v, want params.count.type at line 5", *p.Error.Details)
		}
		reg(map[string]any{"config": strings.Replace(cfg, "${param.tenant}/", "${param.tennant}/", 1)}, http.StatusBadRequest, "bad_config",
			"pipeline.sink.config.path", `no param "tennant"`)
		reg(map[string]any{"config": strings.Replace(cfg, "type: generate", "type: nosuchsource", 1)}, http.StatusBadRequest, "bad_config",
			"pipeline.source.type", `unknown source connector "nosuchsource"`)
		reg(map[string]any{"config": "- just\n- a list\n"}, http.StatusBadRequest, "bad_config", "a template is a pipeline config")
		reg(map[string]any{"config": cfg, "id": strings.Repeat("a", 65)}, http.StatusUnprocessableEntity, "unprocessable")
		reg(map[string]any{"config": cfg, "id": "Has Spaces"}, http.StatusUnprocessableEntity, "unprocessable", "lowercase letters")
		reg(map[string]any{"config": cfg, "description": strings.Repeat("d", 1025)}, http.StatusUnprocessableEntity, "unprocessable")
		reg(map[string]any{"config": strings.Replace(cfg, "name: Tenant Sync\n", "", 1)}, http.StatusUnprocessableEntity, "unprocessable", "no template id")
		reg(map[string]any{"config": cfg, "tags": []string{"stable"}}, http.StatusUnprocessableEntity, "unprocessable", "derived")
		reg(map[string]any{"config": cfg, "tags": []string{"latest"}}, http.StatusUnprocessableEntity, "unprocessable")
		reg(map[string]any{"config": cfg, "tags": []string{"dev", "dev"}}, http.StatusConflict, "conflict", "twice")
		var list client.TemplateList
		want(t, s, operator, http.MethodGet, "/v1/templates?include_deprecated=true", nil, http.StatusOK, &list)
		if len(list.Templates) != 0 {
			t.Fatalf("refused registers wrote %+v", list.Templates)
		}
		for _, path := range []string{"/v1/templates/nope", "/v1/templates/nope/launch", "/v1/templates/nope/rollback", "/v1/templates/nope/deprecate"} {
			method := http.MethodPost
			if path == "/v1/templates/nope" {
				method = http.MethodGet
			}
			wantTemplateProblem(t, s, operator, method, path, nil, http.StatusNotFound, "not_found", "nope")
		}
		wantTemplateProblem(t, s, operator, http.MethodGet, "/v1/templates/"+strings.Repeat("a", 65), nil, http.StatusBadRequest, "bad_config", "path parameter id")
	})

	// One template, followed through its whole life.
	var v1 client.TemplateSummary
	want(t, s, operator, http.MethodPost, "/v1/templates", map[string]any{"config": cfg, "description": "syncs a tenant", "tags": []string{"dev"}}, http.StatusCreated, &v1)
	if v1.Id != "tenant-sync" || v1.Version != 1 || *v1.CreatedBy != "otto" || !v1.Params["tenant"].Required || !v1.Params["token"].Secret ||
		v1.Params["count"].Default != 3.0 || v1.Params["count"].Type != "int" {
		t.Fatalf("registered %+v", v1)
	}

	t.Run("DraftAndVersions", func(t *testing.T) {
		wantTemplateProblem(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync", nil, http.StatusConflict, "conflict", "no launched version")
		var d client.TemplateDetail
		want(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync?version=newest", nil, http.StatusOK, &d)
		if d.Body != cfg || d.Format != "yaml" || d.Status != "draft" || d.Stable != nil || d.IsStable || d.Tags["dev"] != 1 || *d.Description != "syncs a tenant" {
			t.Fatalf("draft detail %+v", d)
		}
		wantTemplateProblem(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync?version=latest", nil, http.StatusBadRequest, "bad_config", "stable", "newest")
		wantTemplateProblem(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync?version=9", nil, http.StatusNotFound, "not_found")
		wantTemplateProblem(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync?version=canary", nil, http.StatusConflict, "conflict", "canary")
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a"}},
			http.StatusConflict, "conflict", "no launched version")
	})

	t.Run("LaunchPromoteRollback", func(t *testing.T) {
		var l client.LaunchResponse
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/launch", nil, http.StatusOK, &l)
		if l.Version != 1 || l.Replaced != nil || l.AlreadyLaunched || l.Status != "launched" {
			t.Fatalf("first launch %+v", l)
		}
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/launch", map[string]any{"version": 1}, http.StatusOK, &l)
		if !l.AlreadyLaunched {
			t.Fatalf("re-launch %+v, want already_launched", l)
		}
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/rollback", nil, http.StatusConflict, "conflict", "roll back")
		// Version 2, registered as a build; the live version stays 1.
		want(t, s, operator, http.MethodPost, "/v1/templates", map[string]any{"config": cfg, "id": "tenant-sync", "tags": []string{"canary"}}, http.StatusCreated, nil)
		var c client.ChannelAssignment
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/tags", map[string]any{"tag": "prod"}, http.StatusOK, &c)
		if c.Tag != "prod" || c.Version != 1 {
			t.Fatalf("promote prod to stable: %+v", c)
		}
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/tags", map[string]any{"tag": "pre-prod", "version": "canary"}, http.StatusOK, &c)
		if c.Version != 2 {
			t.Fatalf("promote pre-prod to canary: %+v", c)
		}
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/tags", map[string]any{"tag": "stable", "version": 2}, http.StatusUnprocessableEntity, "unprocessable", "derived")
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/tags", map[string]any{"tag": "prod", "version": 7}, http.StatusNotFound, "not_found")
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/launch", map[string]any{"version": "pre-prod"}, http.StatusOK, &l)
		if l.Version != 2 || l.Replaced == nil || *l.Replaced != 1 {
			t.Fatalf("launch pre-prod %+v", l)
		}
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/rollback", nil, http.StatusOK, &l)
		if l.Version != 1 || *l.Replaced != 2 {
			t.Fatalf("rollback %+v", l)
		}
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/rollback", nil, http.StatusOK, &l)
		if l.Version != 2 || *l.Replaced != 1 {
			t.Fatalf("second rollback %+v", l)
		}
		var d client.TemplateDetail
		want(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync", nil, http.StatusOK, &d)
		if d.Version != 2 || !d.IsStable || *d.Stable != 2 || *d.Previous != 1 || *d.Newest != 2 || len(d.Launches) != 4 ||
			!slices.Equal(d.Versions, []int64{2, 1}) || d.Tags["prod"] != 1 || d.Tags["canary"] != 2 || *d.Launches[0].LaunchedBy != "otto" {
			t.Fatalf("detail after the launches %+v", d)
		}
	})

	var runID string
	t.Run("Trigger", func(t *testing.T) {
		trigger := func(body map[string]any, status int) []byte {
			t.Helper()
			return want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", body, status, nil)
		}
		bad := func(body map[string]any, param string) {
			t.Helper()
			p := problemOf(t, trigger(body, http.StatusBadRequest))
			if p.Error.Code != "bad_config" || p.Error.Details == nil || (*p.Error.Details)["param"] != param || !strings.Contains(p.Error.Message, "param "+param) ||
				strings.Contains(p.Error.Message, templateSecret) {
				t.Fatalf("trigger %v: %+v, want a problem naming param %s", body, p, param)
			}
		}
		bad(map[string]any{"params": map[string]any{"count": 1}}, "tenant")
		bad(map[string]any{"params": map[string]any{"tenant": "a", "tenatn": "b"}}, "tenatn")
		bad(map[string]any{"params": map[string]any{"tenant": "a", "count": "many"}}, "count")
		bad(map[string]any{"params": map[string]any{"tenant": "${env:HOME}"}}, "tenant")
		bad(map[string]any{"params": map[string]any{"tenant": "a", "token": []string{templateSecret}}}, "token")
		// A value the pipeline refuses is placed in the template's text.
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a", "count": -1}},
			http.StatusBadRequest, "bad_config", "line 8, column", "pipeline.source.config.count")
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a"}, "labels": map[string]string{"template": "x"}},
			http.StatusBadRequest, "bad_config", "labels.template")
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a"}, "env": map[string]string{"A": "b"}},
			http.StatusUnprocessableEntity, "unprocessable", "env")
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a"}, "version": "latest"},
			http.StatusUnprocessableEntity, "unprocessable", "latest")

		body := map[string]any{
			"params": map[string]any{"tenant": "acme", "count": "4", "token": templateSecret}, "idempotency_key": "nightly-acme",
			"labels": map[string]string{"team": "data"}, "version": "prod",
		}
		var tr client.TriggeredRun
		if err := json.Unmarshal(trigger(body, http.StatusAccepted), &tr); err != nil {
			t.Fatal(err)
		}
		if tr.TemplateId != "tenant-sync" || tr.TemplateVersion != 1 || tr.Params["token"] != "***" || tr.Params["count"] != 4.0 || tr.Params["tenant"] != "acme" || tr.Replayed {
			t.Fatalf("triggered %+v", tr)
		}
		runID = tr.RunId
		var again client.TriggeredRun
		if err := json.Unmarshal(trigger(body, http.StatusAccepted), &again); err != nil || again.RunId != runID || !again.Replayed {
			t.Fatalf("a repeated idempotency key: %+v %v, want a replay of %s", again, err, runID)
		}
		rec := s.await(runID, client.RunStatusCompleted)
		if *rec.TemplateId != "tenant-sync" || *rec.TemplateVersion != 1 || rec.Labels["template"] != "tenant-sync" || rec.Labels["template_version"] != "1" ||
			rec.Labels["team"] != "data" || rec.RecordsWritten != 4 || *rec.Name != "Tenant Sync" {
			t.Fatalf("run record %+v", rec)
		}
		if _, err := os.Stat(filepath.Join(out, "acme", templateSecret, "rows.jsonl")); err != nil {
			t.Fatalf("the run did not write the tenant's file: %v", err)
		}
		// A plain run is not the template's.
		s.submit(client.SubmitRequest{Config: generateToFile(1, filepath.Join(out, "plain.jsonl"))})
		var runs client.ListResponse
		want(t, s, viewer, http.MethodGet, "/v1/runs?template=tenant-sync", nil, http.StatusOK, &runs)
		if len(runs.Runs) != 1 || runs.Runs[0].RunId != runID {
			t.Fatalf("runs of the template: %+v", runs.Runs)
		}
		for _, l := range s.logs(runID, 0, 10000) {
			if strings.Contains(l.Line, templateSecret) {
				t.Fatalf("a log line shows the secret param: %q", l.Line)
			}
		}
		if raw := want(t, s, viewer, http.MethodGet, "/v1/runs/"+runID, nil, http.StatusOK, nil); bytes.Contains(raw, []byte(templateSecret)) {
			t.Fatalf("the run record shows the secret param: %s", raw)
		}

		// A run whose sink fails on a path holding the secret shows it
		// masked, in its record and its logs.
		if err := os.MkdirAll(filepath.Join(out, "blocked"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "blocked", templateSecret), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(trigger(map[string]any{"params": map[string]any{"tenant": "blocked", "token": templateSecret}, "version": 1}, http.StatusAccepted), &tr); err != nil {
			t.Fatal(err)
		}
		failed := s.await(tr.RunId, client.RunStatusFailed)
		raw := want(t, s, viewer, http.MethodGet, "/v1/runs/"+tr.RunId, nil, http.StatusOK, nil)
		if failed.Error == nil || !strings.Contains(*failed.Error, "[REDACTED]") || bytes.Contains(raw, []byte(templateSecret)) {
			t.Fatalf("the failed run's record: %s", raw)
		}
		for _, l := range s.logs(tr.RunId, 0, 10000) {
			if strings.Contains(l.Line, templateSecret) {
				t.Fatalf("a log line shows the secret param: %q", l.Line)
			}
		}
		if strings.Contains(s.stderr.String(), templateSecret) {
			t.Fatal("the server's log shows the secret param")
		}
	})

	t.Run("Deprecation", func(t *testing.T) {
		var dr client.DeprecationResult
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/deprecate", map[string]any{"version": 1, "reason": "leaks connections"}, http.StatusOK, &dr)
		if dr.Status != "launched" || dr.Version == nil || *dr.Version != 1 {
			t.Fatalf("deprecate version 1: %+v", dr)
		}
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a"}, "version": 1},
			http.StatusConflict, "conflict", "version 1", "leaks connections")
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/launch", map[string]any{"version": 1}, http.StatusConflict, "conflict", "leaks connections")
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/deprecate", map[string]any{"reason": "use tenant-sync-v2"}, http.StatusOK, &dr)
		if dr.Status != "deprecated" {
			t.Fatalf("deprecate the template: %+v", dr)
		}
		wantTemplateProblem(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "a"}},
			http.StatusConflict, "conflict", "use tenant-sync-v2")
		var list client.TemplateList
		want(t, s, viewer, http.MethodGet, "/v1/templates", nil, http.StatusOK, &list)
		if len(list.Templates) != 0 {
			t.Fatalf("a deprecated template is listed: %+v", list)
		}
		want(t, s, viewer, http.MethodGet, "/v1/templates?include_deprecated=true", nil, http.StatusOK, &list)
		if len(list.Templates) != 1 || list.Templates[0].State.Status != "deprecated" || *list.Templates[0].State.Deprecation.Reason != "use tenant-sync-v2" ||
			list.Templates[0].State.VersionDeprecations[0].Version != 1 || list.Templates[0].Version != 2 {
			t.Fatalf("listing with the deprecated: %+v", list)
		}
		for _, body := range []map[string]any{{"undo": true}, {"undo": true, "version": 1}} {
			want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/deprecate", body, http.StatusOK, &dr)
		}
		if dr.Status != "launched" {
			t.Fatalf("revived: %+v", dr)
		}
		want(t, s, operator, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "beta"}, "version": 1}, http.StatusAccepted, nil)
	})

	t.Run("Roles", func(t *testing.T) {
		ops := []struct {
			method, path, action string
			body                 any
		}{
			{http.MethodPost, "/v1/templates", "template.register", map[string]any{"config": cfg}},
			{http.MethodDelete, "/v1/templates/tenant-sync", "template.delete", nil},
			{http.MethodPost, "/v1/templates/tenant-sync/tags", "template.promote", map[string]any{"tag": "dev"}},
			{http.MethodPost, "/v1/templates/tenant-sync/launch", "template.launch", nil},
			{http.MethodPost, "/v1/templates/tenant-sync/rollback", "template.rollback", nil},
			{http.MethodPost, "/v1/templates/tenant-sync/deprecate", "template.deprecate", nil},
			{http.MethodPost, "/v1/templates/tenant-sync/runs", "template.run", map[string]any{"params": map[string]any{"tenant": "x"}}},
		}
		for _, op := range ops {
			wantTemplateProblem(t, s, viewer, op.method, op.path, op.body, http.StatusForbidden, "forbidden", "operator")
			wantTemplateProblem(t, s, "", op.method, op.path, op.body, http.StatusUnauthorized, "unauthorized")
		}
		for _, tok := range []string{viewer, operator, admin} {
			want(t, s, tok, http.MethodGet, "/v1/templates", nil, http.StatusOK, nil)
			want(t, s, tok, http.MethodGet, "/v1/templates/tenant-sync", nil, http.StatusOK, nil)
		}
		// An admin may do what an operator may.
		want(t, s, admin, http.MethodPost, "/v1/templates/tenant-sync/tags", map[string]any{"tag": "test", "version": 2}, http.StatusOK, nil)

		var audit client.AuditResponse
		want(t, s, admin, http.MethodGet, "/v1/audit?limit=1000", nil, http.StatusOK, &audit)
		denied, ok := map[string]bool{}, map[string]int{}
		for _, e := range audit.Entries {
			if e.RunId != nil && *e.RunId == "tenant-sync" {
				t.Fatalf("an audit entry names the template as a run: %+v", e)
			}
			switch {
			case e.Result == "denied" && e.Principal == "vera":
				denied[e.Action] = true
			case e.Result == "ok":
				ok[e.Action]++
			}
		}
		for _, op := range ops {
			if !denied[op.action] {
				t.Errorf("the viewer's %s was not audited as denied (denied: %v)", op.action, denied)
			}
		}
		for action, n := range map[string]int{
			"template.register": 2, "template.promote": 3, "template.launch": 3, "template.rollback": 2,
			"template.deprecate": 2, "template.undeprecate": 2, "template.run": 4, "run.submit": 5,
		} {
			if ok[action] < n {
				t.Errorf("%d %s entries, want at least %d (all: %v)", ok[action], action, n, ok)
			}
		}
		if raw, _ := json.Marshal(audit); bytes.Contains(raw, []byte(templateSecret)) {
			t.Fatal("the audit log shows the secret param")
		}
	})

	t.Run("Delete", func(t *testing.T) {
		want(t, s, operator, http.MethodDelete, "/v1/templates/tenant-sync?version=canary", nil, http.StatusNoContent, nil)
		var d client.TemplateDetail
		want(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync?version=newest", nil, http.StatusOK, &d)
		if d.Version != 1 || !slices.Equal(d.Versions, []int64{1}) || d.Tags["canary"] != 0 || d.Tags["pre-prod"] != 0 || d.Tags["prod"] != 1 || *d.Stable != 1 {
			t.Fatalf("after deleting version 2: %+v", d)
		}
		want(t, s, operator, http.MethodDelete, "/v1/templates/tenant-sync", nil, http.StatusNoContent, nil)
		wantTemplateProblem(t, s, viewer, http.MethodGet, "/v1/templates/tenant-sync?version=1", nil, http.StatusNotFound, "not_found")
		wantTemplateProblem(t, s, operator, http.MethodDelete, "/v1/templates/tenant-sync", nil, http.StatusNotFound, "not_found")
		// The runs it produced stay.
		s.get(runID)
	})
}

// TestClusteredServerRefusesSecretParams: a clustered server stores each
// run whole for the member that claims it, so a secret param's value could
// not reach that member without being stored.
func TestClusteredServerRefusesSecretParams(t *testing.T) {
	t.Parallel()
	s := start(t, serverOpts{history: "sqlite:" + filepath.Join(t.TempDir(), "history.db"), args: []string{"--cluster"}, bin: fastBin})
	out := t.TempDir()
	wantTemplateProblem(t, s, adminToken, http.MethodPost, "/v1/templates", map[string]any{"config": templateConfig(out)}, http.StatusUnprocessableEntity,
		"unprocessable", "secret param(s) token", "clustered")
	plain := strings.Replace(templateConfig(out), `  token: {secret: true, default: "none"}`+"\n", "", 1)
	plain = strings.Replace(plain, "${param.token}/", "", 1)
	want(t, s, adminToken, http.MethodPost, "/v1/templates", map[string]any{"config": plain, "launch": true}, http.StatusCreated, nil)
	var tr client.TriggeredRun
	want(t, s, adminToken, http.MethodPost, "/v1/templates/tenant-sync/runs", map[string]any{"params": map[string]any{"tenant": "c1"}}, http.StatusAccepted, &tr)
	if tr.Status != "pending" {
		t.Fatalf("a clustered trigger is %s, want pending", tr.Status)
	}
	s.await(tr.RunId, client.RunStatusCompleted)
}
