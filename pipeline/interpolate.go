package pipeline

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Interpolation rules, applied to string values inside connector configs and
// vars (never to keys, and never to faucet's own fields):
//
//	${env:NAME}            the environment variable NAME; an error when unset
//	${env:NAME:-fallback}  NAME, or fallback when NAME is unset or empty
//	${vars.NAME}           the var NAME (row vars over top-level vars)
//	${now…}                the run's clock (see now.go)
//	$${                    a literal "${"
//
// A string that is exactly one ${vars.NAME} takes the var's value with its
// type, so a var holding 5432 fills an integer field; anywhere else a value
// is spliced in as text. Expanded text is not expanded again, so a value can
// never inject a reference. Every environment value used becomes a secret.

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// resolver expands references for one scope: vars is nil while expanding
// vars themselves, which may use the environment but not other vars.
type resolver struct {
	env func(string) (string, bool)
	// allowed, when set, refuses the names that may not be looked up.
	allowed func(string) error
	vars    map[string]any
	secret  func(string)
	// now is the run's clock, for ${now…}.
	now time.Time
}

// interpolate returns v with every string expanded. Each failing string is
// reported at its path and left unexpanded, so one pass finds every problem.
func (r *resolver) interpolate(v any, at path, report func(path, string)) any {
	switch x := v.(type) {
	case string:
		out, err := r.expand(x)
		if err != nil {
			report(at, err.Error())
			return x
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, child := range x {
			out[k] = r.interpolate(child, at.child(k), report)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, child := range x {
			out[i] = r.interpolate(child, at.child(i), report)
		}
		return out
	default:
		return v
	}
}

// expand resolves the references in s.
func (r *resolver) expand(s string) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if strings.HasPrefix(s, "${vars.") && strings.HasSuffix(s, "}") && strings.Count(s, "}") == 1 {
		return r.lookupVar(s[len("${vars.") : len(s)-1])
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unterminated reference %q (write $${ for a literal ${)", s[i:])
			}
			ref := s[i+2 : i+2+end]
			text, err := r.spliced(ref)
			if err != nil {
				return nil, err
			}
			b.WriteString(text)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

// spliced resolves ref as text to splice into a longer string.
func (r *resolver) spliced(ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "env:"):
		return r.lookupEnv(ref[len("env:"):])
	case isNowRef(ref):
		return expandNow(ref, r.now)
	case strings.HasPrefix(ref, "vars."):
		v, err := r.lookupVar(ref[len("vars."):])
		if err != nil {
			return "", err
		}
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		case bool:
			return strconv.FormatBool(x), nil
		case nil:
			return "", nil
		default:
			return "", fmt.Errorf("var %q holds a %s; only a string that is exactly ${vars.%s} can use it", ref[len("vars."):], jsonKind(v), ref[len("vars."):])
		}
	default:
		return "", fmt.Errorf("unknown reference %q: write ${env:NAME}, ${vars.NAME} or ${now}, or $${ for a literal ${", "${"+ref+"}")
	}
}

func (r *resolver) lookupEnv(spec string) (string, error) {
	name, fallback, hasFallback := strings.Cut(spec, ":-")
	if !identifier.MatchString(name) {
		return "", fmt.Errorf("invalid environment variable name %q in ${env:%s}", name, spec)
	}
	if r.allowed != nil {
		if err := r.allowed(name); err != nil {
			return "", err
		}
	}
	val, ok := r.env(name)
	if ok && val != "" {
		r.secret(val)
		return val, nil
	}
	if hasFallback {
		return fallback, nil
	}
	if ok {
		return "", nil
	}
	return "", fmt.Errorf("environment variable %s is not set", name)
}

func (r *resolver) lookupVar(name string) (any, error) {
	if r.vars == nil {
		return nil, fmt.Errorf("vars cannot refer to other vars (${vars.%s})", name)
	}
	if !identifier.MatchString(name) {
		return nil, fmt.Errorf("invalid var name %q in ${vars.%s}", name, name)
	}
	v, ok := r.vars[name]
	if !ok {
		names := make([]string, 0, len(r.vars))
		for n := range r.vars {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("undefined var %q%s", name, suggest(name, names))
	}
	return v, nil
}

// jsonKind names the JSON type of a tree value for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	default:
		return "null"
	}
}
