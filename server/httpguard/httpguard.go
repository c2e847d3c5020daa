// Package httpguard keeps slow and greedy HTTP clients from exhausting
// faucet serve: it caps the connections open at once, per client address
// and in total, answering the excess with 503 on the spot, and closes a
// connection whose request body the handler did not read instead of
// reading the rest of it from the client.
package httpguard

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults of the connection caps.
const (
	DefaultMaxConnections          = 1024
	DefaultMaxConnectionsPerClient = 128
)

// lingerTimeout bounds the writing of a refusal to a client that does not
// read it, and the reading of what a client sent that the server will not
// use: long enough for a client's request already in flight to arrive, so
// closing does not reset the connection before the client read the answer,
// and short enough that a client trickling it holds nothing.
const lingerTimeout = time.Second

// Problem renders the body of the 503 given to a connection over a cap.
type Problem func(msg string) []byte

// Listener accepts connections from an inner listener within the caps:
// one that would exceed maxPerClient connections from its address, or
// maxTotal in all, is answered 503 (a problem document made by problem,
// with Retry-After) and closed, without ever reaching the HTTP server.
type Listener struct {
	net.Listener
	maxPerClient, maxTotal int
	problem                Problem

	mu       sync.Mutex
	total    int
	byClient map[string]int
}

// Listen wraps ln with the caps; a cap <= 0 takes its default.
func Listen(ln net.Listener, maxPerClient, maxTotal int, problem Problem) *Listener {
	if maxPerClient <= 0 {
		maxPerClient = DefaultMaxConnectionsPerClient
	}
	if maxTotal <= 0 {
		maxTotal = DefaultMaxConnections
	}
	return &Listener{Listener: ln, maxPerClient: maxPerClient, maxTotal: maxTotal, problem: problem, byClient: map[string]int{}}
}

// Accept returns the next connection within the caps, refusing the others
// on the way.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientOf(c)
		l.mu.Lock()
		var refusal string
		switch {
		case l.total >= l.maxTotal:
			refusal = fmt.Sprintf("the server has %d connections open, its limit; retry shortly", l.maxTotal)
		case l.byClient[client] >= l.maxPerClient:
			refusal = fmt.Sprintf("this client address has %d connections open, the limit per client; close some or retry shortly", l.maxPerClient)
		default:
			l.total++
			l.byClient[client]++
		}
		l.mu.Unlock()
		if refusal != "" {
			go l.refuse(c, refusal)
			continue
		}
		return &conn{Conn: c, release: sync.OnceFunc(func() { l.release(client) })}, nil
	}
}

func (l *Listener) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
}

// refuse answers a connection over a cap with a complete HTTP response and
// closes it, whatever the client sent or sends.
func (l *Listener) refuse(c net.Conn, msg string) {
	defer c.Close()
	body := l.problem(msg)
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/problem+json\r\nRetry-After: 1\r\n"+
		"Connection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	_ = c.SetDeadline(time.Now().Add(lingerTimeout))
	if _, err := c.Write(b.Bytes()); err != nil {
		return
	}
	// Half-close, then read what the client sent until it hangs up or the
	// deadline passes: closing with unread data would reset the connection,
	// and the client could lose the answer.
	if tcp, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tcp.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// clientOf is the address a connection is counted under: the peer's IP.
func clientOf(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// conn releases its slot once, when closed.
type conn struct {
	net.Conn
	release func()
}

func (c *conn) Close() error {
	c.release()
	return c.Conn.Close()
}

// CloseUnreadBodies makes a response to a request whose body the handler
// did not read to its end (a 401, a 404, a probe that takes no body) close
// the connection, reading what is left of the body for lingerTimeout at
// most: net/http would otherwise read it all before it answers or moves
// on, and a client trickling that body would hold the connection for as
// long as it likes. A body already on its way is still read, so its client
// gets the answer rather than a reset connection.
func CloseUnreadBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		body := &eofReader{ReadCloser: r.Body}
		r.Body = body
		next.ServeHTTP(&closingWriter{ResponseWriter: w, body: body}, r)
	})
}

// eofReader notes whether its reader reached the end.
type eofReader struct {
	io.ReadCloser
	mu  sync.Mutex
	eof bool
}

func (b *eofReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
	}
	return n, err
}

func (b *eofReader) done() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

// closingWriter marks the response Connection: close, and ends the reading
// of the request, when its header goes out before the body was read.
type closingWriter struct {
	http.ResponseWriter
	body    *eofReader
	checked bool
}

func (w *closingWriter) check() {
	if w.checked {
		return
	}
	w.checked = true
	if !w.body.done() {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(lingerTimeout))
	}
}

func (w *closingWriter) WriteHeader(status int) {
	w.check()
	w.ResponseWriter.WriteHeader(status)
}

func (w *closingWriter) Write(p []byte) (int, error) {
	w.check()
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush on, for streamed responses.
func (w *closingWriter) Flush() {
	w.check()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
