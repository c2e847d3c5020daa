// Package mcp serves faucet's tools to assistants over the Model Context
// Protocol. Every tool is an adapter over one or two /v1 operations, called
// through the Go client generated from the OpenAPI document: in faucet
// serve, the client's requests are served in process by the API's own
// handler carrying the MCP caller's bearer token, so authentication, roles,
// limits, redaction, audit and errors are exactly the API's; faucet mcp
// points the same tools at a remote server over HTTP. The tools hold no
// rule of their own beyond the bounds of their arguments and answers.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
)

// Options choose the tool set.
type Options struct {
	// AllowMutations offers the tools that change something (run a
	// pipeline, register, release or delete a template). Without it they
	// are not listed, and calling one anyway is refused.
	AllowMutations bool
	// MaxConfigBytes bounds a config argument; zero means
	// DefaultMaxConfigBytes.
	MaxConfigBytes int
	// Log receives the SDK's warnings and errors and the panics recovered
	// while answering; nil discards them.
	Log *slog.Logger
}

// DefaultMaxConfigBytes bounds a config argument by default: the API's
// default body limit, which would refuse a larger one anyway.
const DefaultMaxConfigBytes = 4 << 20

// Tools is faucet's tool set. It is built once; Server binds it to one
// caller (faucet mcp has one), and the endpoint of faucet serve serves it
// to the caller of each request.
type Tools struct {
	opts Options
	defs []toolDef
}

// Session is how one caller's tool calls reach the API, and what is
// recorded of them.
type Session struct {
	// API is the client the tools call /v1 through, with the caller's
	// credentials.
	API client.ClientInterface
	// Audit records each tool call; nil records nothing (the remote
	// server of faucet mcp audits what it is asked).
	Audit func(ctx context.Context, c Call)
}

// Call is one tool call, as the audit log records it.
type Call struct {
	Tool string
	// RunID is the run the call read or started, if any.
	RunID *string
	// Denied is set when the API refused the caller's token or role.
	Denied bool
}

// New builds the tool set and the input schema of each of its tools.
func New(opts Options) *Tools {
	if opts.MaxConfigBytes <= 0 {
		opts.MaxConfigBytes = DefaultMaxConfigBytes
	}
	t := &Tools{opts: opts}
	t.defs = toolDefs(opts.MaxConfigBytes)
	return t
}

// instructions tell an assistant how the tools fit together.
const instructions = "faucet moves data: a pipeline reads records from a source connector and writes them to a sink " +
	"connector. Find connectors with list_connectors and their config fields with get_connector_schema; " +
	"scaffold_config writes a starter config for a pair, validate_config checks a config and probes its " +
	"connectors. run_pipeline submits a run, which executes on the server: it answers at once with a run_id " +
	"to follow with get_run and get_run_logs. A template (list_templates, get_template) is a registered config " +
	"that run_template runs with params. Each tool answers with the faucet API's JSON; a refusal names the API's " +
	"error code, such as forbidden for a role that lacks the permission."

// Server returns an MCP server offering the tool set to one caller.
func (t *Tools) Server(s Session) *sdk.Server {
	return t.server(func(context.Context) (Session, bool) { return s, true })
}

// server returns an MCP server offering the tool set, each call made as
// the caller session finds in the call's context. Adding the tools to a
// server costs more than most calls (the SDK checks every schema anew), so
// the endpoint of faucet serve builds its server once.
func (t *Tools) server(session func(context.Context) (Session, bool)) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "faucet", Title: "faucet", Version: buildVersion()}, &sdk.ServerOptions{
		Instructions: instructions, Logger: quiet(t.opts.Log),
	})
	for _, d := range t.defs {
		if d.mutating && !t.opts.AllowMutations {
			continue
		}
		d.add(srv, session)
	}
	// Each middleware added wraps the ones before it.
	if !t.opts.AllowMutations {
		srv.AddReceivingMiddleware(t.refuseMutations)
	}
	srv.AddReceivingMiddleware(t.auditCalls(session))
	srv.AddReceivingMiddleware(t.recoverPanics)
	return srv
}

// toolCall is the tool a tools/call message names, if it names one of
// faucet's (listed or not).
func (t *Tools) toolCall(method string, req sdk.Request) (toolDef, bool) {
	call, ok := req.(*sdk.CallToolRequest)
	if !ok || method != "tools/call" || call.Params == nil {
		return toolDef{}, false
	}
	for _, d := range t.defs {
		if d.tool.Name == call.Params.Name {
			return d, true
		}
	}
	return toolDef{}, false
}

// callRecord is what a tool call came to, as its audit entry records it.
// The call fills it in as it goes.
type callRecord struct {
	// decided is set once the call was refused or served: arguments its
	// schema refused decide nothing, as a request the API cannot parse
	// leaves no entry in its audit log.
	decided bool
	runID   *string
	denied  bool
}

type recordKey struct{}

// recordOf is the record of the call ctx belongs to; nil when nothing
// audits the call.
func recordOf(ctx context.Context) *callRecord {
	rec, _ := ctx.Value(recordKey{}).(*callRecord)
	return rec
}

// auditCalls records every decided call of one of faucet's tools once it
// is answered: the ones its tool served (denied when the API refused the
// caller's token or role), and a mutating tool the read-only mode refused
// (denied), which never reaches its tool.
func (t *Tools) auditCalls(session func(context.Context) (Session, bool)) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			d, ok := t.toolCall(method, req)
			if !ok {
				return next(ctx, method, req)
			}
			s, ok := session(ctx)
			if !ok || s.Audit == nil {
				return next(ctx, method, req)
			}
			rec := &callRecord{}
			res, err := next(context.WithValue(ctx, recordKey{}, rec), method, req)
			if rec.decided {
				s.Audit(ctx, Call{Tool: d.tool.Name, RunID: rec.runID, Denied: rec.denied})
			}
			return res, err
		}
	}
}

// recoverPanics turns a panic while answering a message into a JSON-RPC
// internal error. The SDK answers each message on a goroutine of its own,
// where a panic, its own or a tool's, would end the server process; a
// message must not be able to do that.
func (t *Tools) recoverPanics(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				if t.opts.Log != nil {
					t.opts.Log.Error("mcp: answering a message panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				}
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
			}
		}()
		return next(ctx, method, req)
	}
}

// refuseMutations answers a call of an unlisted mutating tool with a tool
// error saying how to allow it, where the SDK would only say that no such
// tool exists: an assistant that knows faucet's tools asks for them.
func (t *Tools) refuseMutations(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if d, ok := t.toolCall(method, req); ok && d.mutating {
			if rec := recordOf(ctx); rec != nil {
				rec.decided, rec.denied = true, true
			}
			return textError(d.tool.Name + " changes what the server holds, and this MCP server is read-only: " +
				"start it with mutations allowed (faucet serve --mcp-allow-mutations, faucet mcp --allow-mutations)"), nil
		}
		return next(ctx, method, req)
	}
}

// buildVersion is faucet's module version as the binary knows it.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// toolDef is one tool: its definition, whether it changes anything, and
// how to add it to a server for a session.
type toolDef struct {
	tool     sdk.Tool
	mutating bool
	add      func(srv *sdk.Server, session func(context.Context) (Session, bool))
}

// handler is a tool's work: the API calls it makes for one input, and what
// it answers.
type handler[In any] func(ctx context.Context, api client.ClientInterface, in In) outcome

// define declares a tool whose input is In, with the schema inferred from
// In and adjusted by shape (bounds, enums and descriptions the Go type
// cannot say). The schema is built here, once per tool set.
func define[In any](tool sdk.Tool, mutating bool, shape func(*jsonschema.Schema), h handler[In]) toolDef {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic("mcp: input schema of " + tool.Name + ": " + err.Error())
	}
	if shape != nil {
		shape(schema)
	}
	tool.InputSchema = schema
	ann := tool.Annotations
	if ann == nil {
		ann = &sdk.ToolAnnotations{}
	}
	if !mutating {
		ann.ReadOnlyHint, ann.IdempotentHint, ann.DestructiveHint = true, true, ptr(false)
	}
	tool.Annotations = ann
	return toolDef{tool: tool, mutating: mutating, add: func(srv *sdk.Server, session func(context.Context) (Session, bool)) {
		sdk.AddTool(srv, &tool, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
			s, ok := session(ctx)
			if !ok {
				return nil, nil, errors.New("internal error: the call reached no caller's session")
			}
			o := h(ctx, s.API, in)
			if rec := recordOf(ctx); rec != nil {
				rec.decided, rec.runID, rec.denied = true, o.runID, o.denied()
			}
			return o.res, nil, nil
		})
	}}
}

func ptr[T any](v T) *T { return &v }

// quiet is log for the SDK, which says at info level what every request
// does (a session connected, initialized, ended): faucet logs its warnings
// and errors only.
func quiet(log *slog.Logger) *slog.Logger {
	if log == nil {
		return nil
	}
	return slog.New(warnings{log.Handler()})
}

// warnings passes on the records of level warn and above.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{w.Handler.WithAttrs(attrs)}
}

func (w warnings) WithGroup(name string) slog.Handler { return warnings{w.Handler.WithGroup(name)} }
