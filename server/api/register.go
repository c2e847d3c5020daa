package api

import (
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/server/auth"
)

// How operations are registered. Every route goes through one of two huma
// groups, which give it what it shares with the other routes of its kind:
//
//   - groups.public: open routes (the health probes): `security: []`. They
//     take no parameters, and refuse unknown ones with 400 like any bad
//     parameter, so a misspelt probe URL is noticed.
//   - groups.v1: the /v1 API (paths are relative to /v1). Its middleware
//     authenticates the bearer token and enforces the role in the operation's
//     metadata (metaRole, required; metaAction names the audited action of a
//     denial). Its security requirement is the bearer token or nothing, since
//     a --no-auth server is called without one; 401 (with WWW-Authenticate)
//     and, for roles above viewer, 403 are declared for it.
//
// Both answer every error with a Problem: an operation lists in Errors the
// statuses its handler returns, and problemResponses makes each a reference
// to a shared response of components.responses (Problem; Unauthorized and
// TooManyRequests, which add their header) and adds 500 and a default
// Problem response. A new route family registers with huma.Register on
// groups.v1 (or groups.public) and gets all of this for free.
type groups struct {
	public *huma.Group
	v1     *huma.Group
}

// Operation metadata keys read by the middleware.
const (
	metaRole   = "faucet-role"
	metaAction = "faucet-action"
	// metaFileProblem marks an operation without a body that answers 422
	// when a file the server reads is invalid.
	metaFileProblem = "faucet-file-problem"
)

// The shared responses of components.responses.
const (
	respProblem         = "Problem"
	respUnauthorized    = "Unauthorized"
	respTooManyRequests = "TooManyRequests"
)

// bearerOrNone is the security requirement of the /v1 operations: a bearer
// token, or none at all against a --no-auth server (the empty requirement).
var bearerOrNone = []map[string][]string{{"bearerAuth": {}}, {}}

func newGroups(a huma.API, d *Deps) groups {
	public := huma.NewGroup(a)
	public.UseSimpleModifier(func(op *huma.Operation) {
		op.Security = []map[string][]string{}
		// A group without a prefix modifies the operation huma.Register
		// serves, so this reaches the request handling too.
		op.RejectUnknownQueryParameters = true
		op.Responses[strconv.Itoa(http.StatusBadRequest)] = &huma.Response{}
		problemResponses(op)
	})
	v1 := huma.NewGroup(a, "/v1")
	v1.UseMiddleware(d.authorize(a))
	v1.UseSimpleModifier(func(op *huma.Operation) {
		op.Security = bearerOrNone
		need, _ := op.Metadata[metaRole].(auth.Role)
		if need == 0 {
			panic("api: /v1 operation " + op.OperationID + " has no role")
		}
		op.Responses[strconv.Itoa(http.StatusUnauthorized)] = &huma.Response{}
		if need > auth.Viewer {
			op.Responses[strconv.Itoa(http.StatusForbidden)] = &huma.Response{}
		}
		problemResponses(op)
	})
	return groups{public: public, v1: v1}
}

// problemResponses turns every error response of op into a reference to the
// shared response of its status and declares 500 and default. huma has by
// then declared the statuses of op.Errors (inline, with the Problem schema)
// and 422 for any operation with parameters; without a body an operation
// answers 422 only for a file the server reads being invalid (metaFileProblem:
// a reload), since a bad parameter is a 400. A response with a body
// of its own (readyz's 503) is left as it is.
func problemResponses(op *huma.Operation) {
	op.Responses[strconv.Itoa(http.StatusInternalServerError)] = &huma.Response{}
	if op.RequestBody == nil && op.Metadata[metaFileProblem] == nil {
		delete(op.Responses, strconv.Itoa(http.StatusUnprocessableEntity))
	}
	for code, r := range op.Responses {
		status, err := strconv.Atoi(code)
		if err != nil || status < 400 || (len(r.Content) > 0 && r.Content[problemMediaType] == nil) {
			continue
		}
		op.Responses[code] = sharedResponse(status)
	}
	op.Responses["default"] = sharedResponse(0)
}

// sharedResponse is the reference to the shared response of an error status.
func sharedResponse(status int) *huma.Response {
	name := respProblem
	switch status {
	case http.StatusUnauthorized:
		name = respUnauthorized
	case http.StatusTooManyRequests:
		name = respTooManyRequests
	}
	return &huma.Response{Ref: "#/components/responses/" + name}
}

const problemMediaType = "application/problem+json"

// sharedResponses are the components.responses every error refers to.
func sharedResponses(r huma.Registry) map[string]*huma.Response {
	problem := map[string]*huma.MediaType{problemMediaType: {Schema: r.Schema(reflectType[Problem](), true, "")}}
	return map[string]*huma.Response{
		respProblem: {
			Description: "An error: an RFC 9457 problem document that carries faucet's error envelope.",
			Content:     problem,
		},
		respUnauthorized: {
			Description: "No valid bearer token.",
			Headers: map[string]*huma.Header{"WWW-Authenticate": {
				Description: "The scheme to authenticate with: `Bearer realm=\"faucet\"`.",
				Required:    true, Schema: &huma.Schema{Type: huma.TypeString},
			}},
			Content: problem,
		},
		respTooManyRequests: {
			Description: "Too many requests (queue_full: the run queue is full, or the log streams a server holds are): retry after Retry-After seconds.",
			Headers: map[string]*huma.Header{"Retry-After": {
				Description: "Seconds to wait before retrying.",
				Required:    true, Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: ptrFloat(0)},
			}},
			Content: problem,
		},
	}
}

func ptrFloat(f float64) *float64 { return &f }
