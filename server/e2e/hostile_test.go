package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// Config bombs: small bodies whose parse would cost gigabytes. Each is
// refused with a 400 naming the limit it broke, and the server's peak
// memory stays within a ceiling, read from /proc.
func TestConfigBombsAreRefusedWithinAMemoryCeiling(t *testing.T) {
	// The build without the race detector: its memory is the product's.
	s := start(t, serverOpts{bin: fastBin})
	pid := s.cmd.Process.Pid
	c := s.admin()
	ctx := context.Background()

	var keys strings.Builder
	for i := 0; i <= 5000; i++ {
		fmt.Fprintf(&keys, "k%d: v\n", i)
	}
	var paths strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&paths, "{%s%d: ", strings.Repeat("k", 20_000), i)
	}
	bombs := []struct {
		name, config, format, want string
	}{
		{"nesting", "version: 1\nname: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000), "yaml", "nests deeper than 200 levels"},
		{"tokens", "version: 1\nname: " + strings.Repeat("[", 40_000) + strings.Repeat("]", 40_000), "yaml", "limit of 65536 YAML tokens"},
		{"documents", strings.Repeat("---\n", 20_000), "yaml", "limit of 16 YAML documents"},
		{"keys", keys.String(), "yaml", "limit of 5000 keys in one YAML mapping"},
		{"paths", paths.String() + "[1]", "yaml", "bytes of key paths"},
		{"json values", `{"a": [` + strings.Repeat("1,", 100_000) + `1]}`, "json", "limit of 100000 values"},
	}
	base := procStatusKB(pid, "VmHWM")
	for _, b := range bombs {
		resp, err := c.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: b.config, ConfigFormat: ptr(client.ConfigFormat(b.format))})
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		if resp.StatusCode() != http.StatusBadRequest || resp.ApplicationproblemJSON400 == nil ||
			!strings.Contains(resp.ApplicationproblemJSON400.Error.Message, b.want) {
			t.Fatalf("%s: %d %.300s; want 400 naming %q", b.name, resp.StatusCode(), resp.Body, b.want)
		}
	}
	// Doctor loads configs the same way.
	dr, err := c.RunDoctorWithResponse(ctx, client.DoctorRequest{Config: bombs[0].config})
	if err != nil || dr.StatusCode() != http.StatusBadRequest || !strings.Contains(string(dr.Body), bombs[0].want) {
		t.Fatalf("doctor with a bomb: %v %d %.300s", err, dr.StatusCode(), dr.Body)
	}
	const ceilingKB = 64 << 10
	if grew := procStatusKB(pid, "VmHWM") - base; grew > ceilingKB {
		t.Fatalf("the bombs raised the server's peak memory by %d KiB, more than %d KiB", grew, ceilingKB)
	}
	list, err := c.ListRunsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 0 {
		t.Fatalf("refused configs must record nothing: %v %.300s", err, list.Body)
	}
}

// NUL characters are refused with a 400 naming the input, on both
// histories alike (PostgreSQL cannot store them, SQLite would), and nothing
// is written.
func TestNULInEveryInputIsA400NamingIt(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		cfg, _ := json.Marshal(generateToFile(1, filepath.Join(t.TempDir(), "out.jsonl")))
		body := func(extra string) string { return `{"config": ` + string(cfg) + extra + `}` }
		cases := []struct {
			method, path, body, want string
		}{
			{"POST", "/v1/runs", body(`, "idempotency_key": "k\u0000"`), "body.idempotency_key"},
			{"POST", "/v1/runs", body(`, "name": "n\u0000"`), "body.name"},
			{"POST", "/v1/runs", body(`, "labels": {"team": "a\u0000"}`), "body.labels.team"},
			{"POST", "/v1/runs", body(`, "labels": {"te\u0000am": "a"}`), `body.labels key te\0am`},
			{"POST", "/v1/runs", body(`, "callback": {"url": "http://x/\u0000"}`), "body.callback.url"},
			{"POST", "/v1/runs", body(`, "callback": {"url": "http://x/", "headers": {"X": "\u0000"}}`), "body.callback.headers.X"},
			{"POST", "/v1/runs", `{"config": "version: 1\u0000"}`, "body.config"},
			{"POST", "/v1/doctor", `{"config": "version: 1\u0000"}`, "body.config"},
			{"GET", "/v1/runs?name=a%00", "", "query parameter name"},
			{"GET", "/v1/runs?cursor=a%00", "", "query parameter cursor"},
			{"GET", "/v1/runs/a%00", "", "path parameter id"},
			{"POST", "/v1/runs/a%00/cancel", "", "path parameter id"},
			{"DELETE", "/v1/runs/a%00", "", "path parameter id"},
			{"GET", "/v1/runs/a%00/logs?format=jsonl", "", "path parameter id"},
			{"GET", "/v1/audit?principal=a%00", "", "query parameter principal"},
			{"GET", "/v1/audit?action=a%00", "", "query parameter action"},
		}
		for _, c := range cases {
			status, p, got := s.call(c.method, c.path, c.body)
			if status != http.StatusBadRequest || p.Error.Code != "bad_config" || !strings.Contains(p.Error.Message, c.want+" contains a NUL character") {
				t.Errorf("%s %s %s: %d %s; want 400 naming %s", c.method, c.path, c.body, status, got, c.want)
			}
		}
		// A raw NUL byte is valid in neither JSON nor YAML: refused whatever
		// the media type, before the body is parsed.
		for _, c := range []struct{ ctype, body string }{
			{"application/json", "{\"config\": \"version: 1\x00\"}"},
			{"application/yaml", generateToFile(1, filepath.Join(t.TempDir(), "nul.jsonl")) + "# a comment the parser skips \x00\n"},
		} {
			status, p, got := s.callAs("POST", "/v1/runs", c.ctype, c.body)
			if status != http.StatusBadRequest || p.Error.Code != "bad_config" || !strings.Contains(p.Error.Message, "body contains a NUL byte") {
				t.Errorf("%s body with a raw NUL: %d %s; want 400 naming the body", c.ctype, status, got)
			}
		}
		list, err := s.admin().ListRunsWithResponse(context.Background(), nil)
		if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 0 {
			t.Fatalf("refused submits must record nothing: %v %.300s", err, list.Body)
		}
	})
}

// problemBody is the part of an error body the tests read.
type problemBody struct {
	Error struct{ Code, Message string }
}

// call sends one request with the admin token and returns its status, its
// problem document (zero when it is none) and its body.
func (s *server) call(method, path, body string) (int, problemBody, []byte) {
	s.t.Helper()
	return s.callAs(method, path, "application/json", body)
}

// callAs is call with a body of media type ctype.
func (s *server) callAs(method, path, ctype, body string) (int, problemBody, []byte) {
	s.t.Helper()
	return s.callWith(method, path, ctype, body, nil)
}

// callWith is callAs with more request headers.
func (s *server) callWith(method, path, ctype, body string, header map[string]string) (int, problemBody, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", ctype)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, got := send(s.t, req)
	var p problemBody
	_ = json.Unmarshal([]byte(got), &p)
	return resp.StatusCode, p, []byte(got)
}

// The smaller gaps: callback credentials are never shown back, rejected
// tokens, doctor calls and no-op cancels leave an audit trail (the rejected
// tokens a rationed one), and labels are bounded.
func TestCallbackRedactionAuditTrailAndLabelBounds(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		c := s.admin()
		ctx := context.Background()
		cfg := generateToFile(1, filepath.Join(t.TempDir(), "out.jsonl"))
		const secret = "cb-s3cret-token"
		headers := map[string]string{"Authorization": "Bearer " + secret}
		id := s.submit(client.SubmitRequest{Config: cfg, Callback: &client.CallbackSpec{Url: "https://hook:" + secret + "@hooks.example/x", Headers: &headers}}).RunId
		s.await(id, client.RunStatusCompleted)
		_, _, one := s.call("GET", "/v1/runs/"+id, "")
		_, _, list := s.call("GET", "/v1/runs", "")
		for _, body := range [][]byte{one, list} {
			if strings.Contains(string(body), secret) || !strings.Contains(string(body), `"Authorization":"[REDACTED]"`) {
				t.Fatalf("a run read shows the callback's credentials: %s", body)
			}
		}

		// No-op cancel and doctor calls are audited.
		if status, _, body := s.call("POST", "/v1/runs/"+id+"/cancel", ""); status != http.StatusOK {
			t.Fatalf("cancel of a finished run: %d %s", status, body)
		}
		b, _ := json.Marshal(client.DoctorRequest{Config: cfg})
		if status, _, body := s.call("POST", "/v1/doctor", string(b)); status != http.StatusOK {
			t.Fatalf("doctor: %d %s", status, body)
		}
		// Rejected tokens are audited, a few per source, not one per try.
		const tries = 30
		for range tries {
			if resp, err := s.client("wrong-token").ListRunsWithResponse(ctx, nil); err != nil || resp.StatusCode() != http.StatusUnauthorized {
				t.Fatalf("bad token: %v %v", err, resp.StatusCode())
			}
		}
		count := func(action, principal string) int {
			t.Helper()
			resp, err := c.ListAuditWithResponse(ctx, &client.ListAuditParams{Action: &action, Principal: &principal, Limit: ptr(int64(1000))})
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("audit: %v", err)
			}
			return len(resp.JSON200.Entries)
		}
		if n := count("run.cancel", "token"); n != 1 {
			t.Errorf("%d audit entries of the no-op cancel, want 1", n)
		}
		if n := count("doctor", "token"); n != 1 {
			t.Errorf("%d audit entries of the doctor call, want 1", n)
		}
		if n := count("GET /v1/runs", "anonymous"); n < 1 || n >= tries {
			t.Errorf("%d audit entries of %d rejected tokens, want some but fewer", n, tries)
		}

		// Labels: count, key and value are bounded; nothing is written.
		many := map[string]string{}
		for i := range 65 {
			many[fmt.Sprintf("k%d", i)] = "v"
		}
		for name, labels := range map[string]map[string]string{
			"count": many,
			"key":   {strings.Repeat("k", 129): "v"},
			"value": {"k": strings.Repeat("v", 1025)},
		} {
			resp, err := c.SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: cfg, Labels: &labels})
			if err != nil || resp.StatusCode() != http.StatusUnprocessableEntity {
				t.Errorf("labels past the %s bound: %v %d %.200s", name, err, resp.StatusCode(), resp.Body)
			}
		}
		page, err := c.ListRunsWithResponse(ctx, nil)
		if err != nil || page.JSON200 == nil || len(page.JSON200.Runs) != 1 {
			t.Fatalf("refused labels must record nothing: %v %.300s", err, page.Body)
		}
	})
}
