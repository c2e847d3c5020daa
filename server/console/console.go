// Package console serves faucet serve's web console: a single-page app built
// from web/ into dist/ and embedded in the binary, so serving it needs neither
// Node nor the network. The shell and its assets are public; every datum the
// console shows it fetches from /v1 with the bearer token its user enters.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// dist is the built console: index.html and the assets it loads.
//
//go:embed all:dist
var dist embed.FS

// ContentSecurityPolicy is the policy sent with the shell, its %s the
// style nonce of the response. Scripts come only from the server itself,
// never inline, so a server string that slipped into the page as markup
// could not run; styles come from the server or carry the nonce (the editor
// adds its own as <style> elements and tags them with it); the console talks
// to its own origin only. Styles set through the CSSOM (by the editor, the
// graph and the charts) are not markup and need no exception.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-%s'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// noncePlaceholder is where the built shell takes the style nonce.
const noncePlaceholder = "FAUCET_STYLE_NONCE"

// shellPath is the file every console route is answered with.
const shellPath = "index.html"

// assetPrefix is where the built assets are served.
const assetPrefix = "/assets/"

// Handler answers the paths no other route of the server took: GET / and
// GET of a console route (any path outside /v1/ whose request accepts HTML,
// so a deep link or a reload of a console page works) are the shell,
// /assets/… the built files, and everything else goes to notFound, so an
// API client still gets the API's problem document.
func Handler(notFound http.Handler) http.Handler {
	c := newFiles(mustSub(dist, "dist"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notFound.ServeHTTP(w, r)
			return
		}
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, assetPrefix):
			if !c.serveAsset(w, r, strings.TrimPrefix(p, "/")) {
				notFound.ServeHTTP(w, r)
			}
		case p == "/" || (!strings.HasPrefix(p, "/v1/") && acceptsHTML(r)):
			c.serveShell(w, r)
		default:
			notFound.ServeHTTP(w, r)
		}
	})
}

// acceptsHTML reports whether the request asks for an HTML document, as a
// browser's navigation does and an API client's request does not.
func acceptsHTML(r *http.Request) bool {
	for _, accept := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(accept, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || (mt != "text/html" && mt != "application/xhtml+xml") {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q == 0 {
				continue
			}
			return true
		}
	}
	return false
}

// files serves the embedded build, read once, gzipped for clients that take
// it (each file compressed on its first such request).
type files struct {
	byName map[string]*file
}

type file struct {
	body, gz []byte
	etag     string
	once     sync.Once
}

func newFiles(fsys fs.FS) *files {
	c := &files{byName: map[string]*file{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		c.byName[name] = &file{body: body, etag: hex.EncodeToString(sum[:8])}
		return nil
	})
	if err == nil && c.byName[shellPath] == nil {
		err = fmt.Errorf("no %s", shellPath)
	}
	if err != nil {
		panic("console: read the embedded build: " + err.Error())
	}
	return c
}

// serveShell writes index.html with a nonce of its own.
func (c *files) serveShell(w http.ResponseWriter, r *http.Request) {
	f := c.byName[shellPath]
	var raw [18]byte
	_, _ = rand.Read(raw[:])
	nonce := base64.RawURLEncoding.EncodeToString(raw[:])
	body := bytes.ReplaceAll(f.body, []byte(noncePlaceholder), []byte(nonce))
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", fmt.Sprintf(ContentSecurityPolicy, nonce))
	// Each response has its own nonce, and names the current assets.
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// serveAsset writes the built file at name and reports whether it exists.
// Its name carries a hash of its content, so it is cached for good.
func (c *files) serveAsset(w http.ResponseWriter, r *http.Request, name string) bool {
	f, ok := c.byName[name]
	if !ok {
		return false
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	body, etag := f.body, f.etag
	if acceptsGzip(r) {
		f.once.Do(func() {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(f.body)
			_ = zw.Close()
			f.gz = buf.Bytes()
		})
		body, etag = f.gz, etag+"-gzip"
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("ETag", `"`+etag+`"`)
	// ServeContent answers HEAD, If-None-Match (304) and ranges.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	return true
}

func acceptsGzip(r *http.Request) bool {
	for _, ae := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(ae, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			if q, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}
