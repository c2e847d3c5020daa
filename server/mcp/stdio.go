package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLineBytes bounds one line of faucet mcp's input: a message carries at
// most a config the tools accept, escaped.
const maxLineBytes = 2 * DefaultMaxConfigBytes

// Stdio is the transport of faucet mcp: one JSON-RPC message a line, read
// from in and written to out. A line that is no message (not JSON, not
// JSON-RPC, longer than maxLineBytes) is answered with a JSON-RPC error
// whose id is null, and the session reads on: the SDK's own stdio
// transport would end the session at the first one. At the end of in it
// answers every request it read before ending the session, as the writer
// of a pipe expects, where the SDK's would drop the answers still being
// worked on.
func Stdio(in io.Reader, out io.Writer) sdk.Transport {
	return &stdio{in: in, out: out}
}

type stdio struct {
	in  io.Reader
	out io.Writer
}

func (t *stdio) Connect(context.Context) (sdk.Connection, error) {
	c := &lineConn{out: t.out, lines: make(chan line), closed: make(chan struct{})}
	// Reading stdin blocks until a line comes, and cannot be interrupted:
	// a goroutine reads, so that Read can return when the session closes.
	go c.readLines(bufio.NewReaderSize(t.in, 64<<10))
	return c, nil
}

// line is what one line of input came to.
type line struct {
	msg jsonrpc.Message
	// bad is the answer to a line that is no message.
	bad *jsonrpc.Error
	// err ends the input: io.EOF, or the reader's failure.
	err error
}

// lineConn is the connection of one faucet mcp session. It counts the
// requests read and the responses written, so that the end of the input
// can wait for the answers.
type lineConn struct {
	out     io.Writer
	writeMu sync.Mutex

	lines     chan line
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	pending int
	// idle is closed when pending drops to zero while the end of the
	// input waits for it.
	idle chan struct{}
}

func (c *lineConn) readLines(r *bufio.Reader) {
	for {
		l := next(r)
		select {
		case c.lines <- l:
		case <-c.closed:
			return
		}
		if l.err != nil {
			return
		}
	}
}

// next reads lines until one is not blank, and decodes it.
func next(r *bufio.Reader) line {
	for {
		text, long, err := readLine(r)
		if long {
			return line{bad: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("a message longer than %d bytes", maxLineBytes)}}
		}
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			if err != nil {
				return line{err: err}
			}
			continue
		}
		msg, derr := jsonrpc.DecodeMessage(text)
		switch {
		case derr == nil:
			return line{msg: msg}
		case !json.Valid(text):
			return line{bad: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: a line that is not JSON"}}
		default:
			return line{bad: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + derr.Error()}}
		}
	}
}

// readLine reads up to the next newline, keeping at most maxLineBytes of
// it: long says the line was longer, and its rest was skipped. A last line
// without a newline comes with io.EOF.
func readLine(r *bufio.Reader) (text []byte, long bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !long && len(text)+len(chunk) > maxLineBytes {
			long, text = true, nil
		}
		if !long {
			text = append(text, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return text, long, err
		}
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l := <-c.lines:
			switch {
			case l.err != nil:
				if errors.Is(l.err, io.EOF) {
					c.drain(ctx)
				}
				return nil, l.err
			case l.bad != nil:
				if err := c.answerBadLine(l.bad); err != nil {
					return nil, err
				}
				continue
			}
			if req, ok := l.msg.(*jsonrpc.Request); ok && req.IsCall() {
				c.add(1)
			}
			return l.msg, nil
		}
	}
}

// answerBadLine writes the error answer of a line that is no message.
func (c *lineConn) answerBadLine(e *jsonrpc.Error) error {
	b, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *string        `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{JSONRPC: "2.0", Error: e})
	if err != nil {
		return fmt.Errorf("encode the answer to a bad line: %w", err)
	}
	return c.writeLine(b)
}

func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode a message: %w", err)
	}
	err = c.writeLine(b)
	if _, ok := msg.(*jsonrpc.Response); ok {
		c.add(-1)
	}
	return err
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write to standard output: %w", err)
	}
	return nil
}

// Close ends the session; out stays open.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *lineConn) SessionID() string { return "" }

func (c *lineConn) add(n int) {
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
func (c *lineConn) drain(ctx context.Context) {
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
