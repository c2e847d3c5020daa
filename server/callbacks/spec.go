// Package callbacks delivers runs' completion callbacks: it checks a
// submitted callback against the server's egress policy, and its Dispatcher
// sends each delivery the history's outbox holds (db.CallbackStore) at least
// once, signed, with retries, from whichever member claims it.
package callbacks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Spec is a run's completion callback as the submission stores it. Its
// JSON is the /v1 API's CallbackSpec; the history's outbox trigger reads
// its on list.
type Spec struct {
	URL         string            `json:"url"`
	Method      string            `json:"method,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	ExtraFields map[string]any    `json:"extra_fields,omitempty"`
	On          []string          `json:"on,omitempty"`
}

// Bounds of a callback, whatever the flags; each refusal names its bound.
const (
	MaxURLBytes         = 2048
	MaxHeaders          = 32
	MaxHeaderNameBytes  = 128
	MaxHeaderValueBytes = 4096
	MaxExtraFieldsBytes = 64 << 10
)

// ReservedBodyKeys are the keys of the body faucet sends; extra_fields may
// not shadow them, so a submission cannot spoof the status a receiver keys
// off.
var ReservedBodyKeys = []string{
	"event", "delivery_id", "run_id", "status", "name", "labels", "submitted_at", "started_at",
	"finished_at", "elapsed_secs", "records_written", "error", "attempt",
}

// reservedHeaders are set by faucet or by the HTTP transport; a callback
// may not set them (the Faucet- prefix is faucet's too).
var reservedHeaders = []string{
	"Connection", "Content-Length", "Content-Type", "Expect", "Host", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "User-Agent",
}

// terminal are the states on may name.
var terminal = []string{"completed", "failed", "cancelled"}

// Policy is the server's rule for callback targets and headers.
type Policy struct {
	// AllowHosts, when not empty, are the only hosts a callback may call
	// (--callback-allow-host), compared without case; a host on it is
	// trusted whatever its address, loopback and link-local included.
	AllowHosts []string
	// Cluster: the run is stored in the shared history for whichever member
	// delivers it, so header values must be ${env:NAME} references each
	// member resolves from its own environment.
	Cluster bool
	// Env looks up a header's ${env:NAME} at submit, to refuse one that is
	// not set here; nil means the process environment.
	Env func(string) (string, bool)
}

// Error is a callback the policy refuses: the submission is unprocessable.
type Error struct {
	// Field is the offending part, as "callback.headers.Authorization".
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }

// Check validates a submitted callback against the policy and returns it
// normalized for storage (method defaulted and upper-cased), or an *Error.
func (p Policy) Check(s Spec) (Spec, error) {
	if err := p.checkURL(s.URL); err != nil {
		return Spec{}, err
	}
	s.Method = strings.ToUpper(strings.TrimSpace(s.Method))
	if s.Method == "" {
		s.Method = http.MethodPost
	}
	if !httpguts.ValidHeaderFieldName(s.Method) || s.Method == http.MethodConnect || s.Method == http.MethodTrace {
		return Spec{}, &Error{"callback.method", fmt.Sprintf("%q is not a method a callback can use", s.Method)}
	}
	if err := p.checkHeaders(s.Headers); err != nil {
		return Spec{}, err
	}
	if err := checkExtraFields(s.ExtraFields); err != nil {
		return Spec{}, err
	}
	for _, st := range s.On {
		if !slices.Contains(terminal, st) {
			return Spec{}, &Error{"callback.on", fmt.Sprintf("%q is not a terminal status: a callback fires on completed, failed or cancelled", st)}
		}
	}
	return s, nil
}

// CheckJSON is Check of a stored or submitted callback document.
func (p Policy) CheckJSON(raw json.RawMessage) (json.RawMessage, error) {
	var s Spec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, &Error{"callback", "is not a callback object: " + err.Error()}
	}
	s, err := p.Check(s)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(s)
	if err != nil {
		return nil, &Error{"callback", err.Error()}
	}
	return out, nil
}

func (p Policy) checkURL(raw string) error {
	bad := func(msg string) error { return &Error{"callback.url", msg} }
	switch {
	case strings.TrimSpace(raw) == "":
		return bad("is empty")
	case len(raw) > MaxURLBytes:
		return bad(fmt.Sprintf("is longer than %d bytes", MaxURLBytes))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("is not a URL")
	}
	if scheme := strings.ToLower(u.Scheme); scheme != "http" && scheme != "https" {
		return bad(fmt.Sprintf("scheme %q is not allowed: http or https only", u.Scheme))
	}
	host := u.Hostname()
	if host == "" {
		return bad("has no host")
	}
	if len(p.AllowHosts) > 0 {
		if !p.allowed(host) {
			return bad(fmt.Sprintf("host %q is not in the server's callback allow-list (%s); --callback-allow-host adds one",
				host, strings.Join(p.AllowHosts, ", ")))
		}
		return nil
	}
	if why := refusedHost(host); why != "" {
		return bad(fmt.Sprintf("host %q is %s, which the server refuses to call; name it with --callback-allow-host if it is meant", host, why))
	}
	return nil
}

// allowed reports whether host is on the allow-list.
func (p Policy) allowed(host string) bool {
	host = strings.ToLower(strings.Trim(host, "[]"))
	for _, h := range p.AllowHosts {
		if strings.ToLower(strings.Trim(h, "[]")) == host {
			return true
		}
	}
	return false
}

func (p Policy) checkHeaders(headers map[string]string) error {
	if len(headers) > MaxHeaders {
		return &Error{"callback.headers", fmt.Sprintf("%d headers, more than %d", len(headers), MaxHeaders)}
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	sort.Strings(names)
	env := p.Env
	if env == nil {
		env = os.LookupEnv
	}
	seen := map[string]string{}
	for _, name := range names {
		field := "callback.headers." + name
		value := headers[name]
		canon := http.CanonicalHeaderKey(name)
		switch {
		case len(name) > MaxHeaderNameBytes:
			return &Error{"callback.headers", fmt.Sprintf("a header name is longer than %d bytes", MaxHeaderNameBytes)}
		case !httpguts.ValidHeaderFieldName(name):
			return &Error{"callback.headers", fmt.Sprintf("%q is not a header name", name)}
		case slices.Contains(reservedHeaders, canon) || strings.HasPrefix(canon, "Faucet-"):
			return &Error{field, "is set by faucet (or by HTTP itself); a callback cannot set it"}
		case len(value) > MaxHeaderValueBytes:
			return &Error{field, fmt.Sprintf("the value is longer than %d bytes", MaxHeaderValueBytes)}
		case !httpguts.ValidHeaderFieldValue(value):
			return &Error{field, "the value holds a control character"}
		case seen[canon] != "":
			return &Error{field, fmt.Sprintf("names the same header as %q", seen[canon])}
		}
		seen[canon] = name
		ref, isRef, err := envRef(value)
		if err != nil {
			return &Error{field, err.Error()}
		}
		switch {
		case !isRef && p.Cluster:
			return &Error{field, "a clustered server stores the run in the shared history for whichever member delivers its callback, " +
				"so a header value there would be stored in clear text: write it as ${env:NAME}, which each member resolves " +
				"from its own environment when it delivers"}
		case isRef:
			if _, ok := env(ref); !ok {
				return &Error{field, fmt.Sprintf("${env:%s}: environment variable %s is not set on this server", ref, ref)}
			}
		}
	}
	return nil
}

// envRef reads a header value: literal text, or exactly ${env:NAME}.
func envRef(value string) (name string, isRef bool, err error) {
	if !strings.Contains(value, "${") {
		return "", false, nil
	}
	if !strings.HasPrefix(value, "${env:") || !strings.HasSuffix(value, "}") || strings.Count(value, "${") != 1 {
		return "", false, errors.New("a header value is literal text or exactly ${env:NAME}")
	}
	name = value[len("${env:") : len(value)-1]
	if !validEnvName(name) {
		return "", false, fmt.Errorf("%q is not an environment variable name", name)
	}
	return name, true, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func checkExtraFields(fields map[string]any) error {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(ReservedBodyKeys, k) {
			return &Error{"callback.extra_fields." + k, fmt.Sprintf("collides with a field faucet sends; the reserved keys are %s", strings.Join(ReservedBodyKeys, ", "))}
		}
	}
	if b, err := json.Marshal(fields); err != nil {
		return &Error{"callback.extra_fields", err.Error()}
	} else if len(b) > MaxExtraFieldsBytes {
		return &Error{"callback.extra_fields", fmt.Sprintf("encode to %d bytes, more than %d", len(b), MaxExtraFieldsBytes)}
	}
	return nil
}
