package console

import (
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// notFound stands for the API's JSON 404.
var notFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, `{"error":{"code":"not_found"}}`)
})

func do(t *testing.T, h http.Handler, method, path string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func TestWhatTheHandlerAnswers(t *testing.T) {
	t.Parallel()
	h := Handler(notFound)
	for _, c := range []struct {
		name, method, path, accept string
		shell                      bool
	}{
		{"the root, whatever it accepts", http.MethodGet, "/", "", true},
		{"the root with HEAD", http.MethodHead, "/", "", true},
		{"a deep link from a browser", http.MethodGet, "/runs/01ab", browserAccept, true},
		{"a deep link asking for XHTML", http.MethodGet, "/templates/t", "application/xhtml+xml", true},
		{"an API client's unknown path", http.MethodGet, "/runs/01ab", "application/json", false},
		{"a client that accepts anything", http.MethodGet, "/runs", "*/*", false},
		{"a client that refuses HTML", http.MethodGet, "/runs", "text/html;q=0, application/json", false},
		{"no Accept at all", http.MethodGet, "/runs", "", false},
		{"an unknown API path from a browser", http.MethodGet, "/v1/nope", browserAccept, false},
		{"a POST from a browser", http.MethodPost, "/runs", browserAccept, false},
		{"a missing asset", http.MethodGet, "/assets/nope.js", browserAccept, false},
	} {
		resp := do(t, h, c.method, c.path, map[string]string{"Accept": c.accept})
		isShell := resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html")
		if isShell != c.shell {
			t.Errorf("%s (%s %s, Accept %q): %d %s, want the shell: %v", c.name, c.method, c.path, c.accept,
				resp.StatusCode, resp.Header.Get("Content-Type"), c.shell)
		}
		if !c.shell && (resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json") {
			t.Errorf("%s: %d %s, want the API's 404", c.name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

func TestTheShellHasAStrictPolicyAndANonceOfItsOwn(t *testing.T) {
	t.Parallel()
	h := Handler(notFound)
	nonceRE := regexp.MustCompile(`'nonce-([A-Za-z0-9_-]{20,})'`)
	seen := map[string]bool{}
	for range 3 {
		resp := do(t, h, http.MethodGet, "/", nil)
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-") {
			t.Errorf("CSP %q allows something unsafe", csp)
		}
		m := nonceRE.FindStringSubmatch(csp)
		if m == nil {
			t.Fatalf("CSP %q has no style nonce", csp)
		}
		html := body(t, resp)
		if !strings.Contains(html, `content="`+m[1]+`"`) || strings.Contains(html, noncePlaceholder) {
			t.Errorf("the shell does not carry its nonce %s", m[1])
		}
		if seen[m[1]] {
			t.Errorf("nonce %s served twice", m[1])
		}
		seen[m[1]] = true
		if got := resp.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("shell Cache-Control %q, want no-store", got)
		}
		for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(html, -1) {
			if !strings.Contains(tag, ` src="/assets/`) {
				t.Errorf("inline or foreign script in the shell: %s", tag)
			}
		}
	}
}

func TestAssetsAreCachedForGoodAndGzipped(t *testing.T) {
	t.Parallel()
	h := Handler(notFound)
	assets, err := fs.Glob(dist, "dist/assets/*")
	if err != nil || len(assets) == 0 {
		t.Fatalf("no built assets: %v", err)
	}
	for _, name := range assets {
		path := strings.TrimPrefix(name, "dist")
		plain := do(t, h, http.MethodGet, path, nil)
		want, _ := fs.ReadFile(dist, name)
		if plain.StatusCode != http.StatusOK || body(t, plain) != string(want) {
			t.Fatalf("GET %s: %d, or not the built file", path, plain.StatusCode)
		}
		if cc := plain.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s: Cache-Control %q", path, cc)
		}
		if plain.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
		ct := plain.Header.Get("Content-Type")
		switch {
		case strings.HasSuffix(path, ".js") && !strings.HasPrefix(ct, "text/javascript"),
			strings.HasSuffix(path, ".css") && !strings.HasPrefix(ct, "text/css"):
			t.Errorf("%s: Content-Type %q", path, ct)
		}

		gz := do(t, h, http.MethodGet, path, map[string]string{"Accept-Encoding": "gzip, br"})
		if gz.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: not gzipped for a client that takes gzip", path)
		}
		zr, err := gzip.NewReader(gz.Body)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := io.ReadAll(zr); string(got) != string(want) {
			t.Errorf("%s: the gzipped body is not the file", path)
		}
		if gz.Header.Get("ETag") == plain.Header.Get("ETag") {
			t.Errorf("%s: the plain and gzipped bodies share an ETag", path)
		}
		again := do(t, h, http.MethodGet, path, map[string]string{"If-None-Match": plain.Header.Get("ETag")})
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d, want 304", path, again.StatusCode)
		}
		refused := do(t, h, http.MethodGet, path, map[string]string{"Accept-Encoding": "gzip;q=0"})
		if refused.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: gzipped for a client that refuses gzip", path)
		}
	}
}
