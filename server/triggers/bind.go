package triggers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

// triggerRef opens a reference to what fired a run: ${trigger.FIELD}.
const triggerRef = "${trigger."

// ref is one ${trigger.*} reference in a config, with the path of the
// value it stands in.
type ref struct {
	name string
	at   []any
}

// references lists the ${trigger.*} references of a config's string values
// (keys are never rewritten).
func references(v any, at []any) []ref {
	switch x := v.(type) {
	case string:
		var out []ref
		for i := 0; i < len(x); {
			switch {
			case strings.HasPrefix(x[i:], "$${"):
				i += 3
			case strings.HasPrefix(x[i:], triggerRef):
				end := strings.IndexByte(x[i:], '}')
				if end < 0 {
					out = append(out, ref{name: x[i+len(triggerRef):], at: at})
					return out
				}
				out = append(out, ref{name: x[i+len(triggerRef) : i+end], at: at})
				i += end + 1
			default:
				i++
			}
		}
		return out
	case map[string]any:
		var out []ref
		for k, child := range x {
			out = append(out, references(child, append(at[:len(at):len(at)], k))...)
		}
		return out
	case []any:
		var out []ref
		for i, child := range x {
			out = append(out, references(child, append(at[:len(at):len(at)], i))...)
		}
		return out
	}
	return nil
}

// fieldsOf are the ${trigger.FIELD} names each kind fills, beside the
// prefixed families of a webhook (body.PATH, header.NAME, query.NAME).
var fieldsOf = map[string][]string{
	KindWebhook:       {"name", "type", "fired_at", "method", "body"},
	KindObjectArrival: {"name", "type", "fired_at", "object_key", "path", "size", "last_modified"},
	KindSchedule:      {"name", "type", "fired_at", "slot"},
}

// refProblem says what is wrong with a reference to name in a config of a
// trigger of kind, or "" when it is one the trigger fills.
func refProblem(kind, name string) string {
	for _, f := range fieldsOf[kind] {
		if name == f {
			return ""
		}
	}
	if kind == KindWebhook {
		for _, family := range []string{"body.", "header.", "query."} {
			rest, ok := strings.CutPrefix(name, family)
			switch {
			case !ok:
				continue
			case rest == "":
				return fmt.Sprintf("${trigger.%s} names no %s", name, strings.TrimSuffix(family, "."))
			case family == "header." && secretHeaders[strings.ToLower(rest)]:
				return fmt.Sprintf("${trigger.%s}: the %s header carries credentials and is not available to a config", name, rest)
			}
			return ""
		}
	}
	fields := fieldsOf[kind]
	if kind == KindWebhook {
		fields = append(fields[:len(fields):len(fields)], "body.PATH", "header.NAME", "query.NAME")
	}
	return fmt.Sprintf("${trigger.%s} is not a field of a %s trigger (it fills %s)", name, kind, strings.Join(fields, ", "))
}

// event is what one fire knows: the fields its kind fills, and a webhook's
// request.
type event struct {
	fields map[string]string
	// body is a webhook's request body, bodyTree its JSON value once a
	// reference to body.PATH parsed it.
	body     []byte
	bodyTree any
	bodyErr  error
	parsed   bool
	header   http.Header
	query    url.Values
	// placeholder stands in for every value, for Check.
	placeholder bool
}

func newEvent(t *Trigger, firedAt time.Time) *event {
	return &event{fields: map[string]string{"name": t.Name, "type": t.Kind, "fired_at": firedAt.UTC().Format(time.RFC3339)}}
}

// lookup returns the value of ${trigger.name}: a string, or for body.PATH
// the JSON value at PATH.
func (e *event) lookup(name string) (any, error) {
	if e.placeholder {
		return "placeholder", nil
	}
	if v, ok := e.fields[name]; ok {
		return v, nil
	}
	if rest, ok := strings.CutPrefix(name, "header."); ok {
		if vs := e.header.Values(rest); len(vs) > 0 {
			return strings.Join(vs, ", "), nil
		}
		return nil, fmt.Errorf("${trigger.%s}: the request has no %s header", name, rest)
	}
	if rest, ok := strings.CutPrefix(name, "query."); ok {
		if e.query.Has(rest) {
			return e.query.Get(rest), nil
		}
		return nil, fmt.Errorf("${trigger.%s}: the request has no query parameter %s", name, rest)
	}
	if name == "body" {
		return string(e.body), nil
	}
	if rest, ok := strings.CutPrefix(name, "body."); ok {
		return e.bodyValue(rest)
	}
	return nil, fmt.Errorf("${trigger.%s} is not filled by this trigger", name)
}

// bodyValue returns the value at a dotted path (keys, and indexes of
// arrays) of the JSON body, parsed within the limits of a config.
func (e *event) bodyValue(p string) (any, error) {
	if !e.parsed {
		e.parsed = true
		if len(strings.TrimSpace(string(e.body))) == 0 {
			e.bodyErr = fmt.Errorf("the request has no body")
		} else if doc, err := pipeline.ParseDocument(e.body, pipeline.FormatJSON); err != nil {
			e.bodyErr = fmt.Errorf("the request body is not JSON: %v", err)
		} else {
			e.bodyTree = doc.Tree()
		}
	}
	if e.bodyErr != nil {
		return nil, fmt.Errorf("${trigger.body.%s}: %v", p, e.bodyErr)
	}
	cur := e.bodyTree
	for _, seg := range strings.Split(p, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[seg]
			if !ok {
				return nil, fmt.Errorf("${trigger.body.%s}: the body has no %q", p, seg)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("${trigger.body.%s}: %q is not an index of an array of %d", p, seg, len(c))
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("${trigger.body.%s}: the body has no %q", p, seg)
		}
	}
	return cur, nil
}

// bind returns the trigger's config with every ${trigger.*} reference
// replaced by what the event says, as JSON. A string that is exactly one
// reference takes the value (a body.PATH keeps its JSON type); anywhere
// else the value is spliced in as text. Whatever comes from the event has
// its "${" written "$${", so the pipeline reads it literally: a request
// cannot make a run read the server's environment or variables.
func bind(doc *pipeline.Document, e *event) ([]byte, error) {
	out, err := bindValue(doc.Tree(), e)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

func bindValue(v any, e *event) (any, error) {
	switch x := v.(type) {
	case string:
		return bindString(x, e)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, child := range x {
			b, err := bindValue(child, e)
			if err != nil {
				return nil, err
			}
			out[k] = b
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, child := range x {
			b, err := bindValue(child, e)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	return v, nil
}

func bindString(s string, e *event) (any, error) {
	if !strings.Contains(s, triggerRef) {
		return s, nil
	}
	if strings.HasPrefix(s, triggerRef) && strings.IndexByte(s, '}') == len(s)-1 {
		v, err := e.lookup(s[len(triggerRef) : len(s)-1])
		if err != nil {
			return nil, err
		}
		return literal(v), nil
	}
	var b strings.Builder
	// dollar: what was written last is a value that ends in "$", which a
	// "{" after it would turn into a reference; it is written "$${" then.
	dollar := false
	put := func(piece string, value bool) {
		if dollar && strings.HasPrefix(piece, "{") {
			b.WriteByte('$')
		}
		b.WriteString(piece)
		dollar = value && strings.HasSuffix(piece, "$")
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			put("$${", false)
			i += 3
		case strings.HasPrefix(s[i:], triggerRef):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				// Unterminated: the pipeline reports it where it reads it.
				put(s[i:], false)
				i = len(s)
				continue
			}
			v, err := e.lookup(s[i+len(triggerRef) : i+end])
			if err != nil {
				return nil, err
			}
			put(escape(text(v)), true)
			i += end + 1
		default:
			put(s[i:i+1], false)
			i++
		}
	}
	return b.String(), nil
}

// literal escapes every string inside v, so the pipeline reads none of it
// as a reference.
func literal(v any) any {
	switch x := v.(type) {
	case string:
		return escape(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, c := range x {
			out[k] = literal(c)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, c := range x {
			out[i] = literal(c)
		}
		return out
	}
	return v
}

func escape(s string) string { return strings.ReplaceAll(s, "${", "$${") }

// text renders a value spliced into a longer string.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// runName renders a run name template: {FIELD} is a field of the event
// ({name}, {type}, {object_key}, {slot}, {method}…); an unknown one is left
// empty. The result is cut to maxRunName bytes.
func runName(tmpl string, e *event) string {
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		if tmpl[i] == '{' {
			if end := strings.IndexByte(tmpl[i:], '}'); end > 0 {
				b.WriteString(e.fields[tmpl[i+1:i+end]])
				i += end + 1
				continue
			}
		}
		b.WriteByte(tmpl[i])
		i++
	}
	return truncate(b.String(), maxRunName)
}

// maxRunName is the longest run name a trigger gives (the API's bound).
const maxRunName = 256

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
