package templates

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/faucet-dev/faucet/pipeline"
)

// ParamsKey is the config key of a template's param declarations.
const ParamsKey = "params"

// Bounds of the params a template declares and a trigger supplies.
const (
	MaxParams              = 64
	MaxParamNameLen        = 64
	MaxParamDescriptionLen = 1024
	MaxParamValueBytes     = 64 << 10
)

// placeholderNumber stands for a number param at registration: 1 rather
// than 0, since a count or a size is more often bounded below by 1 than
// above.
const placeholderNumber = "1"

// The param types.
const (
	TypeString = "string"
	TypeInt    = "int"
	TypeFloat  = "float"
	TypeBool   = "bool"
)

var paramTypes = []string{TypeString, TypeInt, TypeFloat, TypeBool}

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Param is one declared param: what a trigger may (or must) supply.
type Param struct {
	Type     string `json:"type"`
	Required bool   `json:"required"`
	// Default is the value used when a trigger supplies none, of Type.
	Default any `json:"default,omitempty"`
	// Secret values are masked in every response, log and record, and are
	// never stored.
	Secret      bool    `json:"secret"`
	Description *string `json:"description,omitempty"`
}

// Params are a template's declarations by name.
type Params map[string]Param

// names returns the declared names, sorted.
func (ps Params) names() []string {
	out := make([]string, 0, len(ps))
	for n := range ps {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// secret lists the names of the secret params, sorted.
func (ps Params) secret() []string {
	var out []string
	for _, n := range ps.names() {
		if ps[n].Secret {
			out = append(out, n)
		}
	}
	return out
}

// declared reads and checks the params block of a template's document,
// reporting each problem at its path.
func declared(doc *pipeline.Document) (Params, []*pipeline.ConfigError) {
	root, _ := doc.Tree().(map[string]any)
	raw, ok := root[ParamsKey]
	if !ok || raw == nil {
		return Params{}, nil
	}
	block, ok := raw.(map[string]any)
	if !ok {
		return nil, []*pipeline.ConfigError{doc.Problem("want a mapping of param names to their declarations", ParamsKey)}
	}
	if len(block) > MaxParams {
		return nil, []*pipeline.ConfigError{doc.Problem(fmt.Sprintf("%d params, more than %d", len(block), MaxParams), ParamsKey)}
	}
	out := Params{}
	var probs []*pipeline.ConfigError
	names := make([]string, 0, len(block))
	for n := range block {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p, perr := declaration(doc, name, block[name])
		if perr != nil {
			probs = append(probs, perr...)
			continue
		}
		out[name] = p
	}
	return out, probs
}

// declaration checks the declaration of one param.
func declaration(doc *pipeline.Document, name string, raw any) (Param, []*pipeline.ConfigError) {
	at := func(msg string, elems ...any) *pipeline.ConfigError {
		return doc.Problem(msg, append([]any{ParamsKey, name}, elems...)...)
	}
	switch {
	case len(name) > MaxParamNameLen:
		return Param{}, []*pipeline.ConfigError{doc.Problem(fmt.Sprintf("param name %.20q… is longer than %d characters", name, MaxParamNameLen), ParamsKey)}
	case !paramName.MatchString(name):
		return Param{}, []*pipeline.ConfigError{at(fmt.Sprintf("param name %q: want letters, digits and _, not starting with a digit", name))}
	}
	decl, ok := raw.(map[string]any)
	if !ok {
		return Param{}, []*pipeline.ConfigError{at("want a declaration: {type, required, default, secret, description}")}
	}
	p := Param{Type: TypeString}
	var probs []*pipeline.ConfigError
	keys := make([]string, 0, len(decl))
	for k := range decl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := decl[k]
		switch k {
		case "type":
			s, ok := v.(string)
			if !ok || !contains(paramTypes, s) {
				probs = append(probs, at(fmt.Sprintf("type: want one of %s", strings.Join(paramTypes, ", ")), k))
				continue
			}
			p.Type = s
		case "required", "secret":
			b, ok := v.(bool)
			if !ok {
				probs = append(probs, at(k+": want true or false", k))
				continue
			}
			if k == "required" {
				p.Required = b
			} else {
				p.Secret = b
			}
		case "description":
			s, ok := v.(string)
			switch {
			case !ok:
				probs = append(probs, at("description: want a string", k))
			case len(s) > MaxParamDescriptionLen:
				probs = append(probs, at(fmt.Sprintf("description: longer than %d bytes", MaxParamDescriptionLen), k))
			default:
				p.Description = &s
			}
		case "default":
			p.Default = v
		default:
			probs = append(probs, at(fmt.Sprintf("unknown key %q (a param declares type, required, default, secret and description)", k), k))
		}
	}
	if len(probs) > 0 {
		return Param{}, probs
	}
	if d, ok := decl["default"]; ok {
		switch {
		case d == nil:
			return Param{}, []*pipeline.ConfigError{at("default: null is not a value; leave default out instead", "default")}
		case p.Required:
			return Param{}, []*pipeline.ConfigError{at("a param with a default is optional: drop required or default", "default")}
		}
		v, err := coerce(p.Type, d)
		if err != nil {
			return Param{}, []*pipeline.ConfigError{at("default: "+err.Error(), "default")}
		}
		p.Default = v
	}
	return p, nil
}

// coerce converts v (a JSON value, or a config tree's) to a param type:
// numbers and booleans to their text for a string, numeric and boolean
// text to numbers and booleans. The result is a string, a json.Number or a
// bool. Errors never quote v: it may be a secret.
func coerce(typ string, v any) (any, error) {
	if n, ok := v.(float64); ok {
		v = json.Number(strconv.FormatFloat(n, 'g', -1, 64))
	}
	switch typ {
	case TypeString:
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
		return nil, fmt.Errorf("want a string, got %s", kind(v))
	case TypeInt:
		text, ok := numberText(v)
		if !ok {
			return nil, fmt.Errorf("want an integer, got %s", kind(v))
		}
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10)), nil
		}
		// An integral number written as a float (1e3, 5.0).
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, fmt.Errorf("want an integer, got %s", kind(v))
		}
		return json.Number(strconv.FormatInt(int64(f), 10)), nil
	case TypeFloat:
		text, ok := numberText(v)
		if !ok {
			return nil, fmt.Errorf("want a number, got %s", kind(v))
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("want a number, got %s", kind(v))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case TypeBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "yes", "1":
				return true, nil
			case "false", "no", "0":
				return false, nil
			}
		}
		return nil, fmt.Errorf("want true or false, got %s", kind(v))
	}
	return nil, fmt.Errorf("unknown param type %q", typ)
}

// numberText is the text of a number, or of a string holding one.
func numberText(v any) (string, bool) {
	switch x := v.(type) {
	case json.Number:
		return x.String(), true
	case string:
		return strings.TrimSpace(x), true
	}
	return "", false
}

// kind names the JSON type of v for messages that must not show v.
func kind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if x == "" {
			return "an empty string"
		}
		return "a string that does not read as one"
	case json.Number:
		return "a number that is not one"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value of another type"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Bound are the values of a template's params for one trigger (or for
// checking it at registration).
type Bound struct {
	Values map[string]any
	// secrets are the names of the secret params.
	secrets map[string]bool
}

// Redacted returns the values with every secret one masked as "***", the
// only form a response or a record may show.
func (b Bound) Redacted() map[string]any {
	out := make(map[string]any, len(b.Values))
	for k, v := range b.Values {
		if b.secrets[k] {
			v = "***"
		}
		out[k] = v
	}
	return out
}

// SecretValues are the texts of the secret params' values.
func (b Bound) SecretValues() []string {
	var out []string
	for k := range b.secrets {
		if s := text(b.Values[k]); s != "" {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// ParamError is a supplied param a trigger cannot use, naming it.
type ParamError struct {
	Name string
	Msg  string
}

func (e *ParamError) Error() string { return "param " + e.Name + ": " + e.Msg }

// bind resolves every declared param: the supplied value, else its default,
// else (with placeholders, when checking a template at registration) a
// value of its type. A param left without a value is an error (required
// only says a default would be wrong), and so is a supplied name nothing
// declares.
func (ps Params) bind(supplied map[string]any, placeholders bool) (Bound, error) {
	for _, name := range sortedKeys(supplied) {
		if _, ok := ps[name]; !ok {
			known := "it declares none"
			if len(ps) > 0 {
				known = "it declares " + strings.Join(ps.names(), ", ")
			}
			return Bound{}, &ParamError{Name: name, Msg: "the template declares no such param (" + known + ")"}
		}
	}
	b := Bound{Values: map[string]any{}, secrets: map[string]bool{}}
	for _, name := range ps.names() {
		p := ps[name]
		if p.Secret {
			b.secrets[name] = true
		}
		raw, ok := supplied[name]
		switch {
		case ok:
			if s, isText := raw.(string); isText {
				if len(s) > MaxParamValueBytes {
					return Bound{}, &ParamError{Name: name, Msg: fmt.Sprintf("value longer than %d bytes", MaxParamValueBytes)}
				}
				if strings.Contains(s, "${") {
					return Bound{}, &ParamError{Name: name, Msg: "value contains ${: param values are literal data, never references to resolve"}
				}
			}
			v, err := coerce(p.Type, raw)
			if err != nil {
				return Bound{}, &ParamError{Name: name, Msg: err.Error()}
			}
			b.Values[name] = v
		case p.Default != nil:
			b.Values[name] = p.Default
		case placeholders:
			b.Values[name] = placeholder(name, p.Type)
		default:
			msg := "not given, and it has no default"
			if p.Description != nil {
				msg += " (" + *p.Description + ")"
			}
			return Bound{}, &ParamError{Name: name, Msg: msg}
		}
	}
	return b, nil
}

// placeholder stands for a param's value while a template is checked at
// registration, when no value exists yet.
func placeholder(name, typ string) any {
	switch typ {
	case TypeInt, TypeFloat:
		return json.Number(placeholderNumber)
	case TypeBool:
		return false
	}
	return name
}

// text renders a bound value for splicing into a longer string.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
