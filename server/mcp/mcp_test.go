package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
)

// TestBoundPage: a log page keeps whole lines within its byte budget, cuts
// a long line on a rune boundary, and says where the next page starts.
func TestBoundPage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxLogLineBytes) // two bytes a rune
	var lines []client.LogLine
	for i := range 200 {
		lines = append(lines, client.LogLine{Seq: int64(i + 1), Line: long})
	}
	p := boundPage(client.LogPage{Lines: lines, NextAfter: 200})
	if !p.More || len(p.Lines) == 0 || len(p.Lines) == 200 || p.NextAfter != p.Lines[len(p.Lines)-1].Seq {
		t.Fatalf("a page past the budget: %d lines, more %v, next_after %d", len(p.Lines), p.More, p.NextAfter)
	}
	size := 0
	for _, l := range p.Lines {
		if !utf8.ValidString(l.Line) || len(l.Line) > maxLogLineBytes+32 || !strings.HasSuffix(l.Line, "bytes)") {
			t.Fatalf("a cut line: %d bytes, valid %v, ends %q", len(l.Line), utf8.ValidString(l.Line), l.Line[len(l.Line)-16:])
		}
		size += len(l.Line)
	}
	if size > maxLogPageBytes {
		t.Fatalf("the page holds %d bytes of lines, more than %d", size, maxLogPageBytes)
	}

	short := boundPage(client.LogPage{Lines: lines[:3], NextAfter: 3, Truncated: true})
	if short.More || len(short.Lines) != 3 || short.NextAfter != 3 || !short.Truncated {
		t.Fatalf("a page within the budget: %+v", short)
	}
	if empty := boundPage(client.LogPage{NextAfter: 7}); empty.Lines == nil || empty.NextAfter != 7 {
		t.Fatalf("an empty page: %+v", empty)
	}
}

// TestRecoverPanics: a panic while answering a message is an internal
// error, not the end of the process.
func TestRecoverPanics(t *testing.T) {
	t.Parallel()
	h := New(Options{}).recoverPanics(func(context.Context, string, sdk.Request) (sdk.Result, error) {
		panic("boom")
	})
	res, err := h(context.Background(), "tools/call", nil)
	var werr *jsonrpc.Error
	if res != nil || !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInternalError || strings.Contains(werr.Message, "boom") {
		t.Fatalf("answer to a panic: %v %v", res, err)
	}
}

// TestToolSchemas: every tool refuses arguments it does not know, and
// bounds every string, list and map in its arguments, however nested.
func TestToolSchemas(t *testing.T) {
	t.Parallel()
	for _, d := range New(Options{}).defs {
		s := d.tool.InputSchema.(*jsonschema.Schema)
		if s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil {
			t.Errorf("%s takes arguments it does not know", d.tool.Name)
		}
		for path, p := range s.Properties {
			for _, problem := range unbounded(path, p) {
				t.Errorf("%s: %s", d.tool.Name, problem)
			}
		}
	}
}

// unbounded lists the places in p, named from path, that take a string, a
// list or a map of any size.
func unbounded(path string, p *jsonschema.Schema) []string {
	var out []string
	types := append([]string{p.Type}, p.Types...)
	switch {
	case slices.Contains(types, "string") && p.MaxLength == nil && p.Enum == nil:
		out = append(out, path+" is a string of any length")
	case slices.Contains(types, "array") && p.MaxItems == nil:
		out = append(out, path+" is a list of any length")
	case slices.Contains(types, "object") && p.AdditionalProperties != nil && p.AdditionalProperties.Not == nil && p.MaxProperties == nil:
		out = append(out, path+" is a map of any size")
	}
	if p.Items != nil {
		out = append(out, unbounded(path+"[]", p.Items)...)
	}
	if p.PropertyNames != nil {
		out = append(out, unbounded(path+" key", p.PropertyNames)...)
	}
	if p.AdditionalProperties != nil && p.AdditionalProperties.Not == nil {
		out = append(out, unbounded(path+" value", p.AdditionalProperties)...)
	}
	for i, alt := range p.OneOf {
		out = append(out, unbounded(fmt.Sprintf("%s (choice %d)", path, i+1), alt)...)
	}
	return out
}

// TestStdioBadLines: faucet mcp's transport answers each line that is no
// message with a JSON-RPC error and reads on; the requests after them, the
// last one without a newline, are all answered before the end of the input
// ends the session.
func TestStdioBadLines(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{garbage`,
		`[]`,
		strings.Repeat("a", maxLineBytes+1),
		``,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n")
	var out bytes.Buffer
	err := New(Options{}).Server(Session{}).Run(context.Background(), Stdio(strings.NewReader(in), &out))
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("run: %v", err)
	}
	type answer struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	var answers []answer
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var one answer
		if err := json.Unmarshal([]byte(l), &one); err != nil {
			t.Fatalf("an answer that is not JSON: %.200s", l)
		}
		answers = append(answers, one)
	}
	want := []struct {
		code int64
		says string
	}{{jsonrpc.CodeParseError, "not JSON"}, {jsonrpc.CodeInvalidRequest, "invalid request"}, {jsonrpc.CodeInvalidRequest, "longer than"}}
	if len(answers) != len(want)+2 {
		t.Fatalf("%d answers, want %d:\n%.2000s", len(answers), len(want)+2, out.String())
	}
	for i, w := range want {
		if a := answers[i]; a.ID != nil || a.Error == nil || a.Error.Code != w.code || !strings.Contains(a.Error.Message, w.says) {
			t.Errorf("answer %d to a bad line: %+v, want code %d saying %q", i, a, w.code, w.says)
		}
	}
	if a := answers[3]; a.ID != float64(1) || a.Error != nil || !strings.Contains(string(a.Result), `"faucet"`) {
		t.Errorf("the initialize after the bad lines: %+v", a)
	}
	if a := answers[4]; a.ID != float64(2) || a.Error != nil || !strings.Contains(string(a.Result), `"list_runs"`) {
		t.Errorf("the last request, with no newline: %+v", a)
	}
}
