package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaDoc is a compiled JSON Schema together with its parsed document, which
// the loader walks to find the fields marked writeOnly (secrets) and the keys
// an object may hold (for "did you mean" hints).
type schemaDoc struct {
	compiled *jsonschema.Schema
	root     any
	// writeMode is the default the schema declares for a sink's write_mode
	// ("" when none), read once here rather than on every submission.
	writeMode string
}

// refusingLoader keeps schemas self-contained: a $ref to anything outside the
// schema's own document would otherwise read files or the network.
type refusingLoader struct{}

func (refusingLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema references %s; only references inside the schema are allowed", u)
}

// compileSchema compiles raw (a JSON Schema document; draft 2020-12 unless
// it names another with $schema) under the given name.
func compileSchema(name string, raw []byte) (*schemaDoc, error) {
	root, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	loc := "mem:///" + url.PathEscape(name) + ".json"
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(loc, root); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	compiled, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	doc := &schemaDoc{compiled: compiled, root: root}
	// A schema may be a boolean (true takes any config): only an object
	// declares a default.
	obj, _ := root.(map[string]any)
	if props, ok := obj["properties"].(map[string]any); ok {
		if wm, ok := props["write_mode"].(map[string]any); ok {
			doc.writeMode, _ = wm["default"].(string)
		}
	}
	return doc, nil
}

var printer = message.NewPrinter(language.English)

// check validates instance and reports each failing leaf at its path (base
// joined with the location inside instance). Unknown keys and missing
// required keys are reported one key at a time, in faucet's own words.
func (s *schemaDoc) check(instance any, base path, report func(at path, msg string)) {
	err := s.compiled.Validate(instance)
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		report(base, err.Error())
		return
	}
	s.reportLeaves(ve, instance, base, report)
}

func (s *schemaDoc) reportLeaves(ve *jsonschema.ValidationError, instance any, base path, report func(path, string)) {
	if msg, ok := s.alternatives(ve); ok {
		report(pathFromLocation(base, instance, ve.InstanceLocation), msg)
		return
	}
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			s.reportLeaves(c, instance, base, report)
		}
		return
	}
	at := pathFromLocation(base, instance, ve.InstanceLocation)
	inner := pathFromLocation(nil, instance, ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		known := s.keysAt(inner)
		for _, prop := range k.Properties {
			report(at.child(prop), "unknown key"+suggest(prop, known))
		}
	case *kind.Required:
		for _, m := range k.Missing {
			report(at, fmt.Sprintf("missing required key %q", m))
		}
	case *kind.FalseSchema:
		report(at, "not allowed here")
	case *kind.Pattern:
		report(at, s.patternMessage(ve, k))
	default:
		report(at, ve.ErrorKind.LocalizedString(printer))
	}
}

// patternMessage words a value that fails a pattern by what the schema says
// the value should look like, its title and examples, since the regular
// expression itself helps few readers; a schema without a title gets the
// expression.
func (s *schemaDoc) patternMessage(ve *jsonschema.ValidationError, k *kind.Pattern) string {
	_, frag, _ := strings.Cut(ve.SchemaURL, "#")
	sch, _ := s.resolve("#" + frag)
	m, _ := sch.(map[string]any)
	title, _ := m["title"].(string)
	if title == "" {
		return ve.ErrorKind.LocalizedString(printer)
	}
	msg := fmt.Sprintf("%q is not %s", k.Got, title)
	examples, _ := m["examples"].([]any)
	var quoted []string
	for _, e := range examples {
		quoted = append(quoted, fmt.Sprintf("%q", fmt.Sprint(e)))
	}
	switch len(quoted) {
	case 0:
	case 1:
		msg += ", such as " + quoted[0]
	default:
		msg += ", such as " + strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
	}
	return msg
}

// alternatives words a failed oneOf or anyOf whose branches each only
// require keys ({"oneOf": [{"required": ["table"]}, {"required": ["query"]}]})
// as the choice it is, instead of one "missing" error per branch.
func (s *schemaDoc) alternatives(ve *jsonschema.ValidationError) (string, bool) {
	var kw string
	several := false
	switch k := ve.ErrorKind.(type) {
	case *kind.OneOf:
		kw, several = "oneOf", len(k.Subschemas) > 1
	case *kind.AnyOf:
		kw = "anyOf"
	default:
		return "", false
	}
	_, frag, _ := strings.Cut(ve.SchemaURL, "#")
	sch, ok := s.resolve("#" + frag)
	if !ok {
		return "", false
	}
	m, _ := sch.(map[string]any)
	branches, _ := m[kw].([]any)
	var choices []string
	for _, b := range branches {
		bm, _ := b.(map[string]any)
		req, _ := bm["required"].([]any)
		if len(req) == 0 {
			return "", false
		}
		for k := range bm {
			if k != "required" && k != "description" && k != "title" {
				return "", false
			}
		}
		var names []string
		for _, r := range req {
			names = append(names, fmt.Sprintf("%q", r))
		}
		choices = append(choices, strings.Join(names, " and "))
	}
	if len(choices) == 0 {
		return "", false
	}
	if several {
		return "set only one of " + strings.Join(choices, ", "), true
	}
	return "set one of " + strings.Join(choices, ", "), true
}

// keysAt lists the property names the schema declares for the object at p.
func (s *schemaDoc) keysAt(p path) []string {
	schemas := []any{s.root}
	for _, elem := range p {
		var next []any
		for _, sch := range schemas {
			switch e := elem.(type) {
			case string:
				next = append(next, s.memberSchemas(sch, e)...)
			case int:
				next = append(next, s.itemSchemas(sch, e)...)
			}
		}
		schemas = next
	}
	seen := map[string]bool{}
	var keys []string
	for _, sch := range schemas {
		for _, m := range s.applicable(sch, 0, nil) {
			props, _ := m["properties"].(map[string]any)
			for k := range props {
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// secrets calls add with every scalar in value that sits at a schema
// location marked "writeOnly": true.
func (s *schemaDoc) secrets(value any, add func(string)) {
	s.collectSecrets(s.root, value, add, 0)
}

func (s *schemaDoc) collectSecrets(sch, value any, add func(string), depth int) {
	if depth > MaxConfigDepth {
		return
	}
	for _, m := range s.applicable(sch, 0, nil) {
		if m["writeOnly"] == true {
			addScalars(value, add)
			return
		}
	}
	switch v := value.(type) {
	case map[string]any:
		for k, child := range v {
			for _, sub := range s.memberSchemas(sch, k) {
				s.collectSecrets(sub, child, add, depth+1)
			}
		}
	case []any:
		for i, child := range v {
			for _, sub := range s.itemSchemas(sch, i) {
				s.collectSecrets(sub, child, add, depth+1)
			}
		}
	}
}

// FileKeyword is the schema keyword that marks a config field holding a
// file path: "read" for a file the connector reads, "write" for one it
// creates or replaces. faucet serve checks such paths against its file
// roots when a config is submitted (LoadOptions.Files).
const FileKeyword = "x-faucet-file"

// files calls found with the location (inside value), access and path of
// every string value the schema marks with FileKeyword.
func (s *schemaDoc) files(value any, found func(at path, access, name string)) {
	s.collectFiles(s.root, value, nil, found, 0)
}

func (s *schemaDoc) collectFiles(sch, value any, at path, found func(path, string, string), depth int) {
	if depth > MaxConfigDepth {
		return
	}
	if name, ok := value.(string); ok {
		for _, m := range s.applicable(sch, 0, nil) {
			if access, ok := m[FileKeyword].(string); ok {
				found(at, access, name)
				return
			}
		}
		return
	}
	switch v := value.(type) {
	case map[string]any:
		for k, child := range v {
			for _, sub := range s.memberSchemas(sch, k) {
				s.collectFiles(sub, child, at.child(k), found, depth+1)
			}
		}
	case []any:
		for i, child := range v {
			for _, sub := range s.itemSchemas(sch, i) {
				s.collectFiles(sub, child, at.child(i), found, depth+1)
			}
		}
	}
}

// addScalars reports every string, number and boolean under v as text.
func addScalars(v any, add func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			addScalars(c, add)
		}
	case []any:
		for _, c := range x {
			addScalars(c, add)
		}
	case nil:
	default:
		add(fmt.Sprint(x))
	}
}

// maxRefDepth bounds $ref chasing in schemas that refer to themselves.
const maxRefDepth = 32

// applicable expands sch into every schema object that applies at the same
// instance location: itself, what $ref points to, and the branches of
// allOf, anyOf, oneOf and if/then/else. (A branch that does not match still
// counts: a field marked secret in any branch is treated as secret.)
func (s *schemaDoc) applicable(sch any, depth int, out []map[string]any) []map[string]any {
	m, ok := sch.(map[string]any)
	if !ok || depth > maxRefDepth {
		return out
	}
	out = append(out, m)
	if ref, ok := m["$ref"].(string); ok {
		if target, ok := s.resolve(ref); ok {
			out = s.applicable(target, depth+1, out)
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		branches, _ := m[kw].([]any)
		for _, b := range branches {
			out = s.applicable(b, depth+1, out)
		}
	}
	for _, kw := range []string{"then", "else"} {
		if b, ok := m[kw]; ok {
			out = s.applicable(b, depth+1, out)
		}
	}
	return out
}

// memberSchemas returns the schemas that govern member key of an object
// validated by sch: a matching property, matching patternProperties, or else
// additionalProperties.
func (s *schemaDoc) memberSchemas(sch any, key string) []any {
	var out []any
	for _, m := range s.applicable(sch, 0, nil) {
		matched := false
		if props, ok := m["properties"].(map[string]any); ok {
			if sub, ok := props[key]; ok {
				out = append(out, sub)
				matched = true
			}
		}
		if pats, ok := m["patternProperties"].(map[string]any); ok {
			for pat, sub := range pats {
				if re, err := regexp.Compile(pat); err == nil && re.MatchString(key) {
					out = append(out, sub)
					matched = true
				}
			}
		}
		if !matched {
			if sub, ok := m["additionalProperties"].(map[string]any); ok {
				out = append(out, sub)
			}
		}
	}
	return out
}

// itemSchemas returns the schemas that govern item i of an array validated
// by sch, in both the 2020-12 (prefixItems/items) and older (items array /
// additionalItems) spellings.
func (s *schemaDoc) itemSchemas(sch any, i int) []any {
	var out []any
	for _, m := range s.applicable(sch, 0, nil) {
		if prefix, ok := m["prefixItems"].([]any); ok && i < len(prefix) {
			out = append(out, prefix[i])
			continue
		}
		switch items := m["items"].(type) {
		case map[string]any:
			out = append(out, items)
		case []any:
			if i < len(items) {
				out = append(out, items[i])
			} else if extra, ok := m["additionalItems"].(map[string]any); ok {
				out = append(out, extra)
			}
		}
	}
	return out
}

// resolve follows a same-document $ref ("#", "#/$defs/x"); other references
// cannot be followed and report false.
func (s *schemaDoc) resolve(ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return s.root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false
	}
	cur := s.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			var ok bool
			if cur, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// suggest returns a "did you mean" hint naming the candidate closest to
// word, or "" when none is close.
func suggest(word string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestDist && d < len(c) {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// connectorSchemas keeps the connector schemas compiled so far: compiling
// one (the meta-schema check included) costs more than the rest of a load,
// and a catalog hands out the same few schemas on every submission.
var connectorSchemas = &schemaCache{entries: map[string]map[string]*cachedSchema{}}

// schemaCacheSize bounds the cache for a catalog whose schemas keep
// changing; reaching it starts the cache afresh.
const schemaCacheSize = 1024

// schemaCache compiles each distinct (name, schema) pair once; the result,
// an error included, is shared by every load that meets the pair. A
// compiled schema is immutable, so loads use it concurrently. Entries are
// keyed by name, then by the schema's bytes, so that a lookup copies
// neither (a schema is a few kilobytes, looked up on every submission).
type schemaCache struct {
	mu      sync.Mutex
	entries map[string]map[string]*cachedSchema
	size    int
}

type cachedSchema struct {
	once sync.Once
	doc  *schemaDoc
	err  error
}

// compile returns compileSchema(name, raw), compiling only on the first
// call with that name and those bytes.
func (c *schemaCache) compile(name string, raw []byte) (*schemaDoc, error) {
	c.mu.Lock()
	e, ok := c.entries[name][string(raw)]
	if !ok {
		if c.size >= schemaCacheSize {
			clear(c.entries)
			c.size = 0
		}
		byRaw := c.entries[name]
		if byRaw == nil {
			byRaw = map[string]*cachedSchema{}
			c.entries[name] = byRaw
		}
		e = &cachedSchema{}
		byRaw[string(raw)] = e
		c.size++
	}
	c.mu.Unlock()
	e.once.Do(func() { e.doc, e.err = compileSchema(name, raw) })
	return e.doc, e.err
}
