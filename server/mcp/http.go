package mcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
	"github.com/faucet-dev/faucet/server/audit"
)

// Path is where faucet serve answers MCP.
const Path = "/mcp"

// HTTPConfig is what the MCP endpoint of faucet serve needs.
type HTTPConfig struct {
	// API is the handler of the /v1 API, which the tools call in process.
	API http.Handler
	// Audit records every tool call under its caller; required.
	Audit *audit.Recorder
	// AllowMutations offers the tools that change something.
	AllowMutations bool
	// BodyLimit caps a request body in bytes, as --body-limit-bytes caps
	// the API's; zero means DefaultMaxConfigBytes.
	BodyLimit int64
	Log       *slog.Logger
}

// endpoint is the MCP endpoint of faucet serve.
type endpoint struct {
	cfg HTTPConfig
	mcp *sdk.StreamableHTTPHandler
}

// sessionKey carries the caller's Session from the request to its tool
// calls: the SDK hands the tools a context with the request's values.
type sessionKey struct{}

// sessionOf is the Session of the request a tool call came in.
func sessionOf(ctx context.Context) (Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(Session)
	return s, ok
}

// Handler serves MCP's Streamable HTTP transport. Every request is
// authenticated first, by the API itself (GET /v1/whoami in process, with
// the request's Authorization header): a request the API would refuse gets
// the API's own answer (401 with WWW-Authenticate) and never reaches MCP.
// The transport is stateless, each POST
// one JSON-RPC exchange answered with application/json: the server keeps no
// session to bound or to lose, and any member of a cluster answers any
// request.
func Handler(cfg HTTPConfig) http.Handler {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultMaxConfigBytes
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	srv := New(Options{
		AllowMutations: cfg.AllowMutations, MaxConfigBytes: int(cfg.BodyLimit), Log: cfg.Log,
	}).server(sessionOf)
	e := &endpoint{cfg: cfg}
	e.mcp = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: quiet(cfg.Log), MaxRequestBodyBytes: cfg.BodyLimit,
	})
	return e
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api, err := client.NewClient(inProcessBase, client.WithHTTPClient(inProcess{
		api: e.cfg.API, authorization: r.Header.Get("Authorization"), remoteAddr: r.RemoteAddr,
	}))
	if err != nil {
		e.cfg.Log.Error("mcp: in-process API client", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	who, ok := e.authenticate(w, r, api)
	if !ok {
		return
	}
	s := Session{API: api, Audit: e.auditor(who, r)}
	e.mcp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
}

// authenticate asks the API who the caller is. When the API refuses, its
// answer is the answer.
func (e *endpoint) authenticate(w http.ResponseWriter, r *http.Request, api client.ClientInterface) (client.Whoami, bool) {
	var who client.Whoami
	resp, err := api.Whoami(r.Context())
	if err != nil {
		e.cfg.Log.Error("mcp: authenticate", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return who, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		for _, h := range []string{"Content-Type", "WWW-Authenticate", "Retry-After"} {
			if v := resp.Header.Get(h); v != "" {
				w.Header().Set(h, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(reinstance(resp.Body, r.URL.Path))
		return who, false
	}
	if err := json.NewDecoder(resp.Body).Decode(&who); err != nil {
		e.cfg.Log.Error("mcp: read the caller", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return who, false
	}
	return who, true
}

// reinstance is the API's problem document with the path the caller asked
// for as its instance, rather than the path of the call that checked it.
func reinstance(body io.Reader, path string) []byte {
	b, err := io.ReadAll(io.LimitReader(body, maxAnswerBytes))
	if err != nil {
		return nil
	}
	var p map[string]any
	if json.Unmarshal(b, &p) != nil {
		return b
	}
	p["instance"] = path
	if out, err := json.Marshal(p); err == nil {
		return out
	}
	return b
}

// auditor records the caller's tool calls as mcp.TOOL actions, beside the
// entries the API writes of the operations they call.
func (e *endpoint) auditor(caller client.Whoami, r *http.Request) func(context.Context, Call) {
	var source *string
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		source = &host
	}
	who := audit.Actor{Principal: caller.Name, Role: string(caller.Role), SourceIP: source}
	return func(ctx context.Context, c Call) {
		result := audit.ResultOK
		if c.Denied {
			result = audit.ResultDenied
		}
		e.cfg.Audit.Record(ctx, who, audit.Action{Name: "mcp." + c.Tool, RunID: c.RunID, Result: result})
	}
}
