package callbacks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestPolicyRefuses(t *testing.T) {
	open := Policy{Env: env(map[string]string{"HOOK_TOKEN": "t"})}
	cluster := Policy{Cluster: true, Env: open.Env}
	allow := Policy{AllowHosts: []string{"hooks.example.com", "127.0.0.1"}}
	cases := []struct {
		name   string
		policy Policy
		spec   Spec
		field  string
		msg    string
	}{
		{"metadata", open, Spec{URL: "http://169.254.169.254/latest/meta-data/"}, "callback.url", "link-local"},
		{"metadata v6 link-local", open, Spec{URL: "http://[fe80::1]/"}, "callback.url", "link-local"},
		{"metadata name", open, Spec{URL: "http://metadata.google.internal/computeMetadata/v1/"}, "callback.url", "metadata"},
		{"aws v6 metadata", open, Spec{URL: "http://[fd00:ec2::254]/"}, "callback.url", "metadata"},
		{"mapped metadata", open, Spec{URL: "http://[::ffff:169.254.169.254]/"}, "callback.url", "link-local"},
		{"loopback", open, Spec{URL: "http://127.0.0.1:8080/cb"}, "callback.url", "loopback"},
		{"loopback name", open, Spec{URL: "http://localhost:8080/cb"}, "callback.url", "loopback"},
		{"unspecified", open, Spec{URL: "http://0.0.0.0:8080/cb"}, "callback.url", "unspecified"},
		{"file", open, Spec{URL: "file:///etc/passwd"}, "callback.url", `scheme "file" is not allowed`},
		{"gopher", open, Spec{URL: "gopher://x/"}, "callback.url", "http or https only"},
		{"no host", open, Spec{URL: "http:///x"}, "callback.url", "no host"},
		{"empty", open, Spec{URL: "  "}, "callback.url", "empty"},
		{"long", open, Spec{URL: "https://x.example/" + strings.Repeat("a", MaxURLBytes)}, "callback.url", "longer than"},
		{"not on the allow-list", allow, Spec{URL: "https://elsewhere.example/h"}, "callback.url", "allow-list"},
		{"method", open, Spec{URL: "https://x.example/h", Method: "NOT A METHOD"}, "callback.method", "not a method"},
		{"connect", open, Spec{URL: "https://x.example/h", Method: "connect"}, "callback.method", "not a method"},
		{"reserved key", open, Spec{URL: "https://x.example/h", ExtraFields: map[string]any{"status": "completed"}}, "callback.extra_fields.status", "collides"},
		{"delivery id key", open, Spec{URL: "https://x.example/h", ExtraFields: map[string]any{"delivery_id": 1}}, "callback.extra_fields.delivery_id", "collides"},
		{"huge extra", open, Spec{URL: "https://x.example/h", ExtraFields: map[string]any{"blob": strings.Repeat("x", MaxExtraFieldsBytes)}}, "callback.extra_fields", "more than"},
		{"non-terminal on", open, Spec{URL: "https://x.example/h", On: []string{"running"}}, "callback.on", "not a terminal status"},
		{"reserved header", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"content-type": "text/plain"}}, "callback.headers.content-type", "set by faucet"},
		{"faucet header", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"Faucet-Signature": "x"}}, "callback.headers.Faucet-Signature", "set by faucet"},
		{"bad header name", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"X Bad": "x"}}, "callback.headers", "not a header name"},
		{"header injection", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"X-A": "a\r\nX-B: b"}}, "callback.headers.X-A", "control character"},
		{"same header twice", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"X-A": "1", "x-a": "2"}}, "callback.headers.x-a", `same header as "X-A"`},
		{"too many headers", open, Spec{URL: "https://x.example/h", Headers: manyHeaders(MaxHeaders + 1)}, "callback.headers", "more than"},
		{"long header", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"X-A": strings.Repeat("v", MaxHeaderValueBytes+1)}}, "callback.headers.X-A", "longer than"},
		{"partial reference", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"Authorization": "Bearer ${env:HOOK_TOKEN}"}}, "callback.headers.Authorization", "exactly ${env:NAME}"},
		{"unset reference", open, Spec{URL: "https://x.example/h", Headers: map[string]string{"Authorization": "${env:NOPE}"}}, "callback.headers.Authorization", "NOPE is not set"},
		{"literal in a cluster", cluster, Spec{URL: "https://x.example/h", Headers: map[string]string{"Authorization": "Bearer t"}}, "callback.headers.Authorization", "clear text"},
	}
	for _, c := range cases {
		_, err := c.policy.Check(c.spec)
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Msg, c.msg) {
			t.Errorf("%s: %v, want %s: …%s…", c.name, err, c.field, c.msg)
		}
	}
}

func manyHeaders(n int) map[string]string {
	h := map[string]string{}
	for i := range n {
		h["X-H"+strings.Repeat("a", i)] = "v"
	}
	return h
}

func TestPolicyAccepts(t *testing.T) {
	e := env(map[string]string{"HOOK_TOKEN": "t"})
	cases := []struct {
		name   string
		policy Policy
		spec   Spec
	}{
		{"https", Policy{}, Spec{URL: "https://hooks.example.com/faucet"}},
		{"private address", Policy{}, Spec{URL: "http://10.1.2.3:9000/cb"}},
		{"allow-listed loopback", Policy{AllowHosts: []string{"127.0.0.1"}}, Spec{URL: "http://127.0.0.1:9/cb"}},
		{"allow-listed metadata", Policy{AllowHosts: []string{"169.254.169.254"}}, Spec{URL: "http://169.254.169.254/x"}},
		{"allow-list ignores case", Policy{AllowHosts: []string{"Hooks.Example.com"}}, Spec{URL: "https://hooks.example.COM/h"}},
		{"literal header", Policy{}, Spec{URL: "https://x.example/h", Headers: map[string]string{"Authorization": "Bearer t"}}},
		{"reference in a cluster", Policy{Cluster: true, Env: e}, Spec{URL: "https://x.example/h", Headers: map[string]string{"Authorization": "${env:HOOK_TOKEN}"}}},
		{"every state", Policy{}, Spec{URL: "https://x.example/h", On: []string{"completed", "failed", "cancelled"}, ExtraFields: map[string]any{"job_id": "abc"}}},
	}
	for _, c := range cases {
		if _, err := c.policy.Check(c.spec); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	got, err := Policy{}.CheckJSON(json.RawMessage(`{"url": "https://x.example/h", "method": "put"}`))
	if err != nil || string(got) != `{"url":"https://x.example/h","method":"PUT"}` {
		t.Fatalf("normalized: %s, %v", got, err)
	}
	got, err = Policy{}.CheckJSON(json.RawMessage(`{"url": "https://x.example/h"}`))
	if err != nil || !strings.Contains(string(got), `"method":"POST"`) {
		t.Fatalf("default method: %s, %v", got, err)
	}
}

func TestBody(t *testing.T) {
	started := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	finished := started.Add(1500 * time.Millisecond)
	elapsed := 1.5
	name := "orders"
	long := strings.Repeat("é", maxErrorBytes)
	run := &db.RunRecord{
		RunID: "r1", Name: &name, Labels: map[string]string{"env": "prod"}, Status: db.StatusFailed,
		SubmittedAt: started, StartedAt: &started, FinishedAt: &finished, ElapsedSecs: &elapsed,
		RecordsWritten: 42, Error: &long, Attempt: 1,
	}
	b, err := body("d1", run, map[string]any{"job_id": "abc", "status": "spoofed"})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"event": "run.failed", "delivery_id": "d1", "run_id": "r1", "status": "failed", "name": "orders",
		"submitted_at": "2026-06-01T00:00:00Z", "started_at": "2026-06-01T00:00:00Z", "finished_at": "2026-06-01T00:00:01.5Z",
		"elapsed_secs": 1.5, "records_written": 42.0, "attempt": 1.0, "job_id": "abc",
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("%s = %#v, want %#v", k, doc[k], v)
		}
	}
	if e := doc["error"].(string); len(e) > maxErrorBytes+len("…") || !strings.HasSuffix(e, "…") || !json.Valid([]byte(`"`+e+`"`)) {
		t.Errorf("error of %d bytes, want it cut at %d on a character boundary", len(e), maxErrorBytes)
	}
	if doc["labels"].(map[string]any)["env"] != "prod" {
		t.Errorf("labels %v", doc["labels"])
	}
	again, _ := body("d1", run, map[string]any{"job_id": "abc", "status": "spoofed"})
	if string(again) != string(b) {
		t.Error("the body is not the same bytes twice")
	}

	bare, _ := body("d2", &db.RunRecord{RunID: "r2", Status: db.StatusCancelled, SubmittedAt: started}, nil)
	if err := json.Unmarshal(bare, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "started_at", "finished_at", "elapsed_secs", "error"} {
		if v, ok := doc[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

func TestSign(t *testing.T) {
	body := []byte(`{"run_id":"r1"}`)
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(body)
	if got, want := Sign([]byte("s3cret"), body), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestBackoff(t *testing.T) {
	d := New(Config{BackoffBase: time.Second, BackoffMax: time.Minute}, nil)
	for attempt := 1; attempt <= 40; attempt++ {
		full := min(time.Second<<min(attempt-1, 31), time.Minute)
		for range 20 {
			if got := d.backoff(attempt, 0); got < full/2 || got > full {
				t.Fatalf("attempt %d: %v, want within [%v, %v]", attempt, got, full/2, full)
			}
		}
	}
	if got := d.backoff(1, 30*time.Second); got != 30*time.Second {
		t.Errorf("a Retry-After of 30s: %v", got)
	}
	if got := d.backoff(1, time.Hour); got != time.Minute {
		t.Errorf("a Retry-After past the cap: %v, want the cap", got)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"": 0, "7": 7 * time.Second, "soon": 0, "Thu, 01 Jan 2026 00:01:00 GMT": time.Minute} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}
