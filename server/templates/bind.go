package templates

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/faucet-dev/faucet/pipeline"
)

// paramRef opens a reference to a param: ${param.NAME}.
const paramRef = "${param."

// binder rewrites a template's document for one set of param values: the
// params block goes, and every ${param.NAME} in a string value becomes its
// value. A string that is exactly one reference takes the value with its
// type (an int param fills an integer field); anywhere else the value is
// spliced in as text. Only values are rewritten, never keys, and a value is
// never scanned again, so a param cannot inject structure or a reference.
// $${ is left alone: it is the pipeline's escape for a literal ${.
type binder struct {
	doc    *pipeline.Document
	values map[string]any
	// used are the paths of the values a param went into.
	used  map[string]bool
	probs []*pipeline.ConfigError
}

// bindDocument returns doc's tree with values bound, and the paths of the
// values a param went into; a reference to an undeclared param, or one that
// is not a bare name, is a problem at its path.
func bindDocument(doc *pipeline.Document, values map[string]any) (map[string]any, map[string]bool, []*pipeline.ConfigError) {
	root, _ := doc.Tree().(map[string]any)
	b := &binder{doc: doc, values: values, used: map[string]bool{}}
	out := make(map[string]any, len(root))
	for k, v := range root {
		if k == ParamsKey {
			continue
		}
		out[k] = b.value(v, []any{k})
	}
	// In document order, whatever order the maps were walked in.
	slices.SortFunc(b.probs, func(x, y *pipeline.ConfigError) int {
		return cmp.Or(cmp.Compare(x.Line, y.Line), cmp.Compare(x.Column, y.Column), cmp.Compare(x.Path, y.Path))
	})
	return out, b.used, b.probs
}

func (b *binder) value(v any, at []any) any {
	switch x := v.(type) {
	case string:
		return b.str(x, at)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, child := range x {
			out[k] = b.value(child, append(at[:len(at):len(at)], k))
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, child := range x {
			out[i] = b.value(child, append(at[:len(at):len(at)], i))
		}
		return out
	}
	return v
}

func (b *binder) str(s string, at []any) any {
	if !strings.Contains(s, paramRef) {
		return s
	}
	if strings.HasPrefix(s, paramRef) && strings.IndexByte(s, '}') == len(s)-1 {
		v, ok := b.lookup(s[len(paramRef):len(s)-1], at)
		if !ok {
			return s
		}
		b.used[pipeline.PathString(at...)] = true
		return v
	}
	var out strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			out.WriteString("$${")
			i += 3
		case strings.HasPrefix(s[i:], paramRef):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				// Unterminated: the pipeline reports it where it reads it.
				out.WriteString(s[i:])
				i = len(s)
				continue
			}
			v, ok := b.lookup(s[i+len(paramRef):i+end], at)
			if !ok {
				return s
			}
			b.used[pipeline.PathString(at...)] = true
			out.WriteString(text(v))
			i += end + 1
		default:
			out.WriteByte(s[i])
			i++
		}
	}
	return out.String()
}

// lookup returns the value of param name, reporting a reference nothing
// declares.
func (b *binder) lookup(name string, at []any) (any, bool) {
	v, ok := b.values[name]
	if ok {
		return v, true
	}
	msg := fmt.Sprintf("${param.%s}: the template declares no param %q", name, name)
	if !paramName.MatchString(name) {
		msg = fmt.Sprintf("${param.%s} is not a param reference: write ${param.NAME} with a declared name", name)
	} else if len(b.values) > 0 {
		msg += " (it declares " + strings.Join(sortedKeys(b.values), ", ") + ")"
	}
	b.probs = append(b.probs, b.doc.Problem(msg, at...))
	return nil, false
}

// without returns problems less those at the paths in skip.
func without(problems []*pipeline.ConfigError, skip map[string]bool) []*pipeline.ConfigError {
	out := problems[:0:0]
	for _, p := range problems {
		if !skip[p.Path] {
			out = append(out, p)
		}
	}
	return out
}
