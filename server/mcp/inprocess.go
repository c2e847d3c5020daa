package mcp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// inProcessBase is the base URL of the API as the in-process client sees
// it; no request to it leaves the process.
const inProcessBase = "http://faucet.in-process"

// inProcess serves the generated client's requests with the API's own
// handler, as the caller of an MCP request: with its bearer token and its
// address, so the API authenticates, authorizes, limits and audits the call
// as if the caller had made it over HTTP.
type inProcess struct {
	api           http.Handler
	authorization string
	remoteAddr    string
}

// Do serves req and returns the API's answer.
func (p inProcess) Do(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.RemoteAddr = p.remoteAddr
	r.RequestURI = req.URL.RequestURI()
	r.Header.Del("Authorization")
	if p.authorization != "" {
		r.Header.Set("Authorization", p.authorization)
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}
	if r.ContentLength > 0 {
		r.Header.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	w := &recorder{header: http.Header{}}
	p.api.ServeHTTP(w, r)
	if w.over {
		return nil, fmt.Errorf("the faucet API's answer is larger than %d MiB: ask for less (a smaller limit)", maxAnswerBytes>>20)
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

// recorder is the response writer of an in-process call: it keeps the
// answer in memory, at most maxAnswerBytes of it.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.over || w.body.Len()+len(b) > maxAnswerBytes {
		w.over = true
		return 0, fmt.Errorf("answer larger than %d bytes", maxAnswerBytes)
	}
	return w.body.Write(b)
}
