package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// rawRequest sends one request with the admin token and returns its status,
// headers and body.
func (s *server) rawRequest(method, path, contentType, body string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// wantProblem fails unless the answer is a problem document of status and
// code.
func wantProblem(t *testing.T, what string, status int, h http.Header, body []byte, wantStatus int, wantCode string) client.Problem {
	t.Helper()
	if status != wantStatus || h.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%s: %d %s %s; want %d problem+json", what, status, h.Get("Content-Type"), body, wantStatus)
	}
	p := problemOf(t, body)
	if string(p.Error.Code) != wantCode || p.Status != int64(wantStatus) {
		t.Fatalf("%s: %+v; want code %s", what, p, wantCode)
	}
	return p
}

func TestBadInputIsOneStatusPerKind(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t), args: []string{"--body-limit-bytes", "2048"}})
		out := filepath.Join(t.TempDir(), "out.jsonl")
		done := s.submit(client.SubmitRequest{Config: generateToFile(1, out)})
		s.await(done.RunId, client.RunStatusCompleted)

		// Every parameter that does not parse or validate is 400, whether
		// huma's schema check or a handler caught it.
		for _, path := range []string{
			"/v1/runs?limit=0", "/v1/runs?limit=abc", "/v1/runs?status=done",
			"/v1/runs?since=yesterday", "/v1/runs?cursor=no-such-run",
			"/v1/audit?limit=0", "/v1/schemas/widget/generate",
			"/v1/runs/" + done.RunId + "/logs?format=xml", "/v1/runs/" + done.RunId + "/logs?after=-1",
			"/v1/runs/" + done.RunId + "/logs?format=json&limit=0",
			"/v1/runs/" + done.RunId + "/logs/stream?after=x",
			"/healthz?verbose=1", "/readyz?x=1", "/metrics?format=json",
		} {
			st, hd, b := s.rawRequest(http.MethodGet, path, "", "")
			wantProblem(t, "GET "+path, st, hd, b, http.StatusBadRequest, "bad_config")
		}

		// A page larger than 500 is read as 500, as the Rust faucet does.
		if st, _, b := s.rawRequest(http.MethodGet, "/v1/runs?limit=100000", "", ""); st != http.StatusOK || !strings.Contains(string(b), done.RunId) {
			t.Fatalf("limit=100000: %d %s", st, b)
		}

		// A cursor that named a run deleted since is refused too, rather
		// than read as the first page.
		page, err := s.admin().ListRunsWithResponse(context.Background(), &client.ListRunsParams{Cursor: &done.RunId})
		if err != nil || page.JSON200 == nil || len(page.JSON200.Runs) != 0 {
			t.Fatalf("after the only run: %v %s", err, page.Body)
		}
		if r, err := s.admin().DeleteRunWithResponse(context.Background(), done.RunId); err != nil || r.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete: %v %d", err, r.StatusCode())
		}
		page, err = s.admin().ListRunsWithResponse(context.Background(), &client.ListRunsParams{Cursor: &done.RunId})
		if err != nil || page.ApplicationproblemJSON400 == nil || !strings.Contains(page.ApplicationproblemJSON400.Error.Message, "cursor") {
			t.Fatalf("after a deleted run: %v %d %s", err, page.StatusCode(), page.Body)
		}

		// The 413 message states the limit itself.
		st, hd, b := s.rawRequest(http.MethodPost, "/v1/runs", "application/json", `{"config": "`+strings.Repeat("x", 2100)+`"}`)
		p := wantProblem(t, "oversized body", st, hd, b, http.StatusRequestEntityTooLarge, "payload_too_large")
		if !strings.Contains(p.Detail, "2048 bytes") || strings.Contains(p.Detail, "2049") {
			t.Fatalf("413 message %q does not state the limit of 2048 bytes", p.Detail)
		}

		// An unparsable body is not echoed back.
		const secret = "s3cr3t-in-a-broken-body"
		st, hd, b = s.rawRequest(http.MethodPost, "/v1/runs", "application/json", `{"config": "`+secret)
		wantProblem(t, "malformed JSON", st, hd, b, http.StatusBadRequest, "bad_config")
		if strings.Contains(string(b), secret) {
			t.Fatalf("the error echoes the body: %s", b)
		}

		// A body of an unknown media type is 415, on both routes that take a config.
		for _, path := range []string{"/v1/runs", "/v1/doctor"} {
			st, hd, b = s.rawRequest(http.MethodPost, path, "text/csv", "a,b\n")
			wantProblem(t, "text/csv to "+path, st, hd, b, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}

		// Query fields belong to a YAML body; a JSON body carries its own.
		st, hd, b = s.rawRequest(http.MethodPost, "/v1/runs?name=x", "application/json", `{"config": "version: 1"}`)
		wantProblem(t, "JSON body with ?name", st, hd, b, http.StatusBadRequest, "bad_config")

		// A callback the egress policy refuses is 422 naming why.
		for callback, why := range map[string]string{
			`{"url": "http://169.254.169.254/latest/meta-data/"}`:                        "link-local",
			`{"url": "http://metadata.google.internal/"}`:                                "metadata",
			`{"url": "http://127.0.0.1:8080/v1/runs"}`:                                   "loopback",
			`{"url": "file:///etc/passwd"}`:                                              `scheme "file"`,
			`{"url": "https://hooks.example/", "extra_fields": {"status": "completed"}}`: "callback.extra_fields.status",
			`{"url": "https://hooks.example/", "headers": {"Faucet-Delivery-Id": "x"}}`:  "callback.headers.Faucet-Delivery-Id",
		} {
			body := fmt.Sprintf(`{"config": %q, "callback": %s}`, generateToFile(1, out), callback)
			st, hd, b = s.rawRequest(http.MethodPost, "/v1/runs", "application/json", body)
			if p := wantProblem(t, "callback "+callback, st, hd, b, http.StatusUnprocessableEntity, "unprocessable"); !strings.Contains(p.Detail, why) {
				t.Errorf("callback %s: %q does not name %q", callback, p.Detail, why)
			}
		}

		list, err := s.admin().ListRunsWithResponse(context.Background(), nil)
		if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 0 {
			t.Fatalf("bad input must record nothing: %v %s", err, list.Body)
		}
	})
}

func TestYAMLBodyIsTheConfig(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		out := filepath.Join(t.TempDir(), "out.jsonl")
		cfg := generateToFile(3, out)
		q := url.Values{"name": {"from-yaml"}, "label": {"team=data", "tier=gold"}, "idempotency_key": {"yaml-1"}, "timeout_secs": {"600"}}
		for i, ct := range []string{"application/yaml", "application/x-yaml", "text/yaml; charset=utf-8"} {
			st, _, b := s.rawRequest(http.MethodPost, "/v1/runs?"+q.Encode(), ct, cfg)
			if st != http.StatusAccepted {
				t.Fatalf("submit as %s: %d %s", ct, st, b)
			}
			var sub client.SubmitResponse
			decodeJSON(t, b, &sub)
			// The same key and payload, whatever the media type: a replay.
			if sub.Replayed != (i > 0) {
				t.Fatalf("submit %d as %s: replayed %v", i, ct, sub.Replayed)
			}
			rec := s.await(sub.RunId, client.RunStatusCompleted)
			if deref(rec.Name) != "from-yaml" || rec.Labels["team"] != "data" || rec.Labels["tier"] != "gold" ||
				deref(rec.IdempotencyKey) != "yaml-1" || rec.RecordsWritten != 3 {
				t.Fatalf("run of a YAML submit: %+v", rec)
			}
		}

		st, hd, b := s.rawRequest(http.MethodPost, "/v1/runs?label=no-equals-sign", "application/yaml", cfg)
		wantProblem(t, "label without =", st, hd, b, http.StatusBadRequest, "bad_config")
		st, hd, b = s.rawRequest(http.MethodPost, "/v1/runs?timeout_secs=0", "application/yaml", cfg)
		wantProblem(t, "timeout_secs=0", st, hd, b, http.StatusBadRequest, "bad_config")
		st, hd, b = s.rawRequest(http.MethodPost, "/v1/runs", "application/yaml", "version: 1\npipeline: [\n")
		p := wantProblem(t, "broken YAML", st, hd, b, http.StatusBadRequest, "bad_config")
		if !strings.Contains(p.Detail, "line") {
			t.Fatalf("broken YAML body: %q names no line", p.Detail)
		}

		st, _, b = s.rawRequest(http.MethodPost, "/v1/doctor", "application/yaml", cfg)
		var rep client.DoctorReport
		if st != http.StatusOK {
			t.Fatalf("doctor of a YAML body: %d %s", st, b)
		}
		decodeJSON(t, b, &rep)
		if !rep.Ok || len(rep.Invocations) != 1 {
			t.Fatalf("doctor report: %+v", rep)
		}
	})
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}
