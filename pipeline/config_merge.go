package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// merge lays over on top of base: objects merge key by key, recursively;
// scalars and arrays in over replace what base holds; null in over removes
// the key base holds (as in a JSON merge patch), so an override can take a
// field away; a null for a key base lacks stays, as a value. Neither input
// is modified.
func merge(base, over any) any {
	bm, bok := base.(map[string]any)
	om, ook := over.(map[string]any)
	if !bok || !ook {
		return over
	}
	out := make(map[string]any, len(bm)+len(om))
	for k, v := range bm {
		out[k] = v
	}
	for k, v := range om {
		prev, ok := out[k]
		switch {
		case ok && v == nil:
			delete(out, k)
		case ok:
			out[k] = merge(prev, v)
		default:
			out[k] = v
		}
	}
	return out
}

// applySet applies one --set override, "dotted.path=value": the path walks
// object keys and [n] array indexes, creating missing objects on the way; the
// value is read as JSON when it parses as JSON (5, true, "x", [..], {..}) and
// as a plain string otherwise. It returns the new tree and the path set; a
// problem names the override, which is where it must be fixed.
func applySet(tree any, set string) (any, path, *ConfigError) {
	key, raw, ok := strings.Cut(set, "=")
	if !ok {
		return nil, nil, &ConfigError{Set: set, Message: "want key.path=value"}
	}
	p, err := parseSetPath(key)
	if err != nil {
		return nil, nil, &ConfigError{Set: set, Message: err.Error()}
	}
	var value any = raw
	if doc, jerr := parseJSON([]byte(raw)); jerr == nil {
		value = doc.tree
	}
	out, err := setAt(tree, p, value)
	if err != nil {
		return nil, nil, &ConfigError{Set: set, Path: p.String(), at: p, Message: err.Error()}
	}
	return out, p, nil
}

// ApplySets returns a config with --set overrides applied, as JSON: what a
// client submits to a server so that it loads exactly what faucet run would
// have. Problems come back as ConfigErrors (see ConfigProblems).
func ApplySets(data []byte, format Format, sets []string) ([]byte, error) {
	doc, cerr := parsedDocs.parse(data, format)
	if cerr != nil {
		return nil, cerr
	}
	tree := doc.tree
	var probs problems
	for _, set := range sets {
		next, _, serr := applySet(tree, set)
		if serr != nil {
			probs.add(serr)
			continue
		}
		tree = next
	}
	if err := probs.err(); err != nil {
		return nil, err
	}
	return json.MarshalIndent(tree, "", "  ")
}

// parseSetPath splits "a.b[2].c" into its keys and indexes.
func parseSetPath(s string) (path, error) {
	var p path
	for _, part := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" {
			return nil, fmt.Errorf("empty key in %q", s)
		}
		p = append(p, name)
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(idx)
			if !ok || err != nil || n < 0 {
				return nil, fmt.Errorf("bad index in %q", s)
			}
			p = append(p, n)
			if after == "" {
				break
			}
			if !strings.HasPrefix(after, "[") {
				return nil, fmt.Errorf("bad index in %q", s)
			}
			rest = after[1:]
		}
	}
	return p, nil
}

// setAt returns tree with value at p, copying every container it changes.
func setAt(tree any, p path, value any) (any, error) {
	if len(p) == 0 {
		return value, nil
	}
	switch e := p[0].(type) {
	case string:
		var m map[string]any
		switch t := tree.(type) {
		case map[string]any:
			m = t
		case nil:
			m = map[string]any{}
		default:
			return nil, fmt.Errorf("cannot set key %q inside a %s", e, jsonKind(tree))
		}
		child, err := setAt(m[e], p[1:], value)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m)+1)
		for k, v := range m {
			out[k] = v
		}
		out[e] = child
		return out, nil
	default:
		i := e.(int)
		a, ok := tree.([]any)
		if !ok || i >= len(a) {
			return nil, fmt.Errorf("no array item [%d] to set", i)
		}
		child, err := setAt(a[i], p[1:], value)
		if err != nil {
			return nil, err
		}
		out := append([]any(nil), a...)
		out[i] = child
		return out, nil
	}
}

// fingerprint is the sha256 (hex) of the canonical JSON of tree: keys
// sorted, numbers in one spelling, no insignificant whitespace. The same
// config in YAML or JSON, in any key order, fingerprints the same.
func fingerprint(tree any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		// The tree holds only JSON values; this cannot fail.
		panic(fmt.Sprintf("encode config tree: %v", err))
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:])
}
