package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// Error codes of the faucet error envelope. They are part of the wire
// contract: clients switch on them, so they never change once published.
const (
	CodeBadConfig            ErrorCode = "bad_config"
	CodeUnauthorized         ErrorCode = "unauthorized"
	CodeForbidden            ErrorCode = "forbidden"
	CodeNotFound             ErrorCode = "not_found"
	CodeRequestTimeout       ErrorCode = "request_timeout"
	CodeConflict             ErrorCode = "conflict"
	CodePayloadTooLarge      ErrorCode = "payload_too_large"
	CodeUnsupportedMediaType ErrorCode = "unsupported_media_type"
	CodeUnprocessable        ErrorCode = "unprocessable"
	CodeQueueFull            ErrorCode = "queue_full"
	CodeInternal             ErrorCode = "internal"
	CodeUnavailable          ErrorCode = "unavailable"
)

// statusCodes is the code of an error of each status the API answers with
// when its producer (usually huma) named none.
var statusCodes = map[int]ErrorCode{
	http.StatusBadRequest:            CodeBadConfig,
	http.StatusUnauthorized:          CodeUnauthorized,
	http.StatusForbidden:             CodeForbidden,
	http.StatusNotFound:              CodeNotFound,
	http.StatusRequestTimeout:        CodeRequestTimeout,
	http.StatusConflict:              CodeConflict,
	http.StatusRequestEntityTooLarge: CodePayloadTooLarge,
	http.StatusUnsupportedMediaType:  CodeUnsupportedMediaType,
	http.StatusUnprocessableEntity:   CodeUnprocessable,
	http.StatusTooManyRequests:       CodeQueueFull,
	http.StatusInternalServerError:   CodeInternal,
	http.StatusServiceUnavailable:    CodeUnavailable,
}

// allErrorCodes is the ErrorCode enum: every code the API sends. A new code
// goes here, and into statusCodes when it is its status's usual one.
var allErrorCodes = []ErrorCode{
	CodeBadConfig, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeRequestTimeout, CodeConflict,
	CodePayloadTooLarge, CodeUnsupportedMediaType, CodeUnprocessable, CodeQueueFull, CodeInternal, CodeUnavailable,
}

// problemTypePrefix makes each code a distinct RFC 9457 problem type. Tag URIs
// are the RFC's recommendation for types that are identifiers, not pages.
const problemTypePrefix = "tag:faucet.dev,2026:problem/"

// Problem is the one error body of the API: an RFC 9457 problem document that
// also carries faucet's error envelope, so both problem-aware clients and
// clients written against faucet's /v1 API read it.
type Problem struct {
	Type     string    `json:"type" doc:"Problem type URI; one per error code."`
	Title    string    `json:"title" doc:"Short summary of the problem type (the HTTP status text)."`
	Status   int       `json:"status" doc:"HTTP status code."`
	Detail   string    `json:"detail" doc:"Explanation of this occurrence; equals error.message."`
	Instance string    `json:"instance,omitempty" doc:"Request path of this occurrence."`
	Envelope ErrorInfo `json:"error" doc:"faucet's error envelope."`

	headers http.Header
}

// ErrorInfo is faucet's error envelope, kept inside the problem document so
// existing faucet clients find error.code and error.message where they expect.
type ErrorInfo struct {
	Code    ErrorCode      `json:"code"`
	Message string         `json:"message" doc:"Human-readable message."`
	Details map[string]any `json:"details,omitempty" doc:"Structured context, e.g. a doctor report or validation errors; omitted when empty."`
}

// Error returns the message, so a Problem is an error.
func (p *Problem) Error() string { return p.Envelope.Message }

// GetStatus implements huma.StatusError.
func (p *Problem) GetStatus() int { return p.Status }

// GetHeaders implements huma.HeadersError, which is how Retry-After and
// WWW-Authenticate reach the response.
func (p *Problem) GetHeaders() http.Header {
	if p.headers == nil {
		return http.Header{}
	}
	return p.headers
}

// ContentType marks the body as a problem document (RFC 9457).
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// WithHeader returns p with a response header added.
func (p *Problem) WithHeader(name, value string) *Problem {
	if p.headers == nil {
		p.headers = http.Header{}
	}
	p.headers.Set(name, value)
	return p
}

// NewProblem builds a Problem with an explicit code. details may be nil.
func NewProblem(status int, code ErrorCode, msg string, details map[string]any) *Problem {
	if len(details) == 0 {
		details = nil
	}
	return &Problem{
		Type:     problemTypePrefix + string(code),
		Title:    http.StatusText(status),
		Status:   status,
		Detail:   msg,
		Envelope: ErrorInfo{Code: code, Message: msg, Details: details},
	}
}

// codeForStatus is the envelope code of an error whose producer (usually huma
// itself) only knew the status. A status the API does not otherwise use is
// bad input when it is a 4xx and an internal error otherwise, so the code is
// always one of the enum's.
func codeForStatus(status int) ErrorCode {
	if code, ok := statusCodes[status]; ok {
		return code
	}
	if status >= 400 && status < 500 {
		return CodeBadConfig
	}
	return CodeInternal
}

// newHumaError replaces huma.NewError: every error huma produces (validation,
// body limits, unknown content types) and every huma.ErrorXXX helper a handler
// calls comes out as a Problem. Validation failures list each violation under
// details.errors with its location. ctx is nil outside a request.
func newHumaError(ctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
	var list []map[string]any
	for _, err := range errs {
		if err == nil {
			continue
		}
		var p *Problem
		if errors.As(err, &p) {
			return p
		}
		item := map[string]any{"message": err.Error()}
		var d huma.ErrorDetailer
		if errors.As(err, &d) {
			det := d.ErrorDetail()
			item["message"] = det.Message
			if det.Location != "" {
				item["location"] = det.Location
			}
			// The value of the whole body is the body itself: a client
			// sent it and needs no copy, and it can be megabytes or hold
			// secrets that would then reach logs and proxies.
			if det.Value != nil && det.Location != "body" {
				item["value"] = det.Value
			}
			if isParameter(det.Location) && status == http.StatusUnprocessableEntity {
				// A parameter that does not parse or validate is malformed
				// input, like an unparsable body: 400, whichever check
				// caught it, so clients see one status for every bad
				// parameter. 422 stays for bodies that parse but cannot be
				// accepted.
				status = http.StatusBadRequest
			}
		}
		list = append(list, item)
	}
	if status == 0 {
		// huma asks for an example error (status 0) to derive the schema.
		status = http.StatusInternalServerError
	}
	if status >= 500 && len(list) > 0 {
		// Server-side causes are logged, never echoed: they can carry paths
		// or connection strings.
		list = nil
	}
	if status == http.StatusRequestEntityTooLarge && ctx != nil {
		// huma reports the byte count it stopped reading at, one more than
		// the limit (see Register): name the limit itself.
		if limit := ctx.Operation().MaxBodyBytes - 1; limit > 0 {
			msg = fmt.Sprintf("request body is larger than the limit of %d bytes (--body-limit-bytes)", limit)
		}
	}
	var details map[string]any
	if len(list) > 0 {
		details = map[string]any{"errors": list}
		if msg == "validation failed" && len(list) == 1 {
			msg = "validation failed: " + describeDetail(list[0])
		}
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return NewProblem(status, codeForStatus(status), msg, details)
}

// isParameter tells a huma error location in a path, query or header
// parameter ("query.limit") from one in the body ("body.config").
func isParameter(location string) bool {
	for _, in := range []string{"path.", "query.", "header.", "cookie."} {
		if strings.HasPrefix(location, in) {
			return true
		}
	}
	return false
}

func describeDetail(item map[string]any) string {
	s, _ := item["message"].(string)
	if loc, ok := item["location"].(string); ok {
		s = loc + ": " + s
	}
	return s
}

func init() {
	// Every array this API returns is encoded as [] when empty, never null.
	huma.DefaultArrayNullable = false
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return newHumaError(nil, status, msg, errs...)
	}
	huma.NewErrorWithContext = newHumaError
}

// fillInstance is a huma transformer stamping the request path on every
// Problem, wherever it was created.
func fillInstance(ctx huma.Context, _ string, v any) (any, error) {
	if p, ok := v.(*Problem); ok && p.Instance == "" {
		u := ctx.URL()
		p.Instance = u.Path
	}
	return v, nil
}

// Problem constructors for the statuses handlers return.

func errBadConfig(msg string, details map[string]any) *Problem {
	return NewProblem(http.StatusBadRequest, CodeBadConfig, msg, details)
}

func errNotFound(msg string) *Problem {
	return NewProblem(http.StatusNotFound, CodeNotFound, msg, nil)
}

func errConflict(msg string) *Problem {
	return NewProblem(http.StatusConflict, CodeConflict, msg, nil)
}

func errUnprocessable(msg string, details map[string]any) *Problem {
	return NewProblem(http.StatusUnprocessableEntity, CodeUnprocessable, msg, details)
}

func errQueueFull(retryAfterSecs int) *Problem {
	return NewProblem(http.StatusTooManyRequests, CodeQueueFull, "the run queue is full; retry later", nil).
		WithHeader("Retry-After", strconv.Itoa(retryAfterSecs))
}

func errUnavailable(msg string) *Problem {
	return NewProblem(http.StatusServiceUnavailable, CodeUnavailable, msg, nil)
}

func errInternal() *Problem {
	return NewProblem(http.StatusInternalServerError, CodeInternal, "internal error; see the server log", nil)
}

// WriteProblem writes p as a problem+json response, for handlers outside
// huma (unknown routes).
func WriteProblem(w http.ResponseWriter, p *Problem) {
	for k, vs := range p.GetHeaders() {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}
