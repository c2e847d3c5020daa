package mcp

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stdio is the transport of faucet mcp: newline-delimited JSON-RPC read
// from in and written to out. At the end of in it answers every request it
// read before ending the session, as the writer of a pipe expects; the
// SDK's own stdio transport would end at once and drop the answers still
// being worked on.
func Stdio(in io.Reader, out io.Writer) sdk.Transport {
	return &drainTransport{io: &sdk.IOTransport{
		Reader: io.NopCloser(in), Writer: nopWriteCloser{out},
		// A message carries at most a config the tools accept, escaped.
		MaxLineLength: 2 * DefaultMaxConfigBytes,
	}}
}

// nopWriteCloser leaves out open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type drainTransport struct{ io sdk.Transport }

func (t *drainTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.io.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, closed: make(chan struct{})}, nil
}

// drainConn counts the requests read and the responses written, and holds
// the end of the input back until they match.
type drainConn struct {
	sdk.Connection
	mu      sync.Mutex
	pending int
	// idle is closed when pending drops to zero while the end of the
	// input waits for it.
	idle      chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		if errors.Is(err, io.EOF) {
			c.drain(ctx)
		}
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.add(1)
	}
	return msg, nil
}

func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.add(-1)
	}
	return err
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

func (c *drainConn) add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = max(0, c.pending+n)
	if c.pending == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// drain waits until every request read is answered, the session is
// closed, or ctx ends.
func (c *drainConn) drain(ctx context.Context) {
	c.mu.Lock()
	if c.pending == 0 {
		c.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	c.idle = idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-c.closed:
	case <-ctx.Done():
	}
}
