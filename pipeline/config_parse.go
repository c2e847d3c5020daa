package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Format is the syntax of a config document.
type Format string

// The config syntaxes. FormatAuto reads a document as JSON when it opens
// with `{"` or `{}` (blanks aside), and as YAML otherwise, so a YAML flow
// mapping such as `{a: 1}` stays YAML while JSON gets JSON's error messages.
const (
	FormatAuto Format = ""
	FormatYAML Format = "yaml"
	FormatJSON Format = "json"
)

// position is a 1-based line and column in a document's text.
type position struct{ line, col int }

// document is a parsed config: its value tree (map[string]any, []any, string,
// bool, json.Number, nil) and where each path sits in the source text.
type document struct {
	tree      any
	positions map[string]position
	// locate, when set, fills positions on first use: most documents load
	// without a problem to place.
	locate  func(map[string]position)
	located sync.Once
}

// at returns the position of the value at p, or zero when it has none.
func (d *document) at(p path) position {
	if d == nil {
		return position{}
	}
	if d.locate != nil {
		d.located.Do(func() {
			d.positions = map[string]position{}
			d.locate(d.positions)
		})
	}
	return d.positions[p.String()]
}

// Bounds of the parsed-document cache.
const (
	docCacheEntries = 256
	docCacheBytes   = 4 << 20
	// docCacheMaxDoc: a larger document is parsed every time.
	docCacheMaxDoc = 64 << 10
)

// parsedDocs keeps recently parsed documents. faucet serve sees the same few
// pipeline configs (and its defaults) submitted again and again, and parsing
// YAML costs more than the rest of a load. Nothing modifies a document once
// parsed, so loads share it.
var parsedDocs = &docCache{entries: map[string]*document{}}

type docCache struct {
	mu      sync.Mutex
	entries map[string]*document
	bytes   int
}

// parse is parseDocument through the cache; problems are not cached.
func (c *docCache) parse(data []byte, format Format) (*document, *ConfigError) {
	if len(data) > docCacheMaxDoc {
		return parseDocument(data, format)
	}
	key := string(format) + "\x00" + string(data)
	c.mu.Lock()
	d, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return d, nil
	}
	d, cerr := parseDocument(data, format)
	if cerr != nil {
		return nil, cerr
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= docCacheEntries || c.bytes+len(key) > docCacheBytes {
		clear(c.entries)
		c.bytes = 0
	}
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = d
		c.bytes += len(key)
	}
	return d, nil
}

// parseDocument parses data in the given format into a document. A syntax
// error comes back as a *ConfigError with its line and column.
func parseDocument(data []byte, format Format) (*document, *ConfigError) {
	parseSlots <- struct{}{}
	defer func() { <-parseSlots }()
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch format {
	case FormatJSON:
		return parseJSON(data)
	case FormatYAML:
		return parseYAML(data)
	case FormatAuto:
		if looksLikeJSON(data) {
			return parseJSON(data)
		}
		return parseYAML(data)
	default:
		return nil, &ConfigError{Message: fmt.Sprintf("unknown config format %q (want yaml or json)", format)}
	}
}

func looksLikeJSON(data []byte) bool {
	rest := bytes.TrimLeft(data, " \t\r\n")
	if !bytes.HasPrefix(rest, []byte("{")) {
		return false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	return len(rest) > 0 && (rest[0] == '"' || rest[0] == '}')
}

func parseYAML(data []byte) (*document, *ConfigError) {
	tokens, cerr := lexYAML(data)
	if cerr != nil {
		return nil, cerr
	}
	file, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, yamlError(err)
	}
	var body ast.Node
	for i, d := range file.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			pos := d.Body.GetToken().Position
			return nil, &ConfigError{Line: pos.Line, Column: pos.Column, Message: fmt.Sprintf("a config is one YAML document; document %d starts here", i+1)}
		}
		body = d.Body
	}
	if body == nil {
		return nil, &ConfigError{Message: "empty config"}
	}
	m := &yamlMeasure{anchors: map[string]ast.Node{}, memo: map[ast.Node][2]int{}}
	size, depth := m.measure(body, 0)
	if depth > MaxConfigDepth {
		return nil, &ConfigError{Message: fmt.Sprintf("config nests deeper than %d levels", MaxConfigDepth)}
	}
	if size > MaxConfigValues {
		return nil, &ConfigError{Message: fmt.Sprintf("config expands to more than %d values through aliases", MaxConfigValues)}
	}
	var raw any
	if err := yaml.NodeToValue(body, &raw); err != nil {
		return nil, yamlError(err)
	}
	doc := &document{locate: func(out map[string]position) { yamlPositions(body, nil, out) }}
	tree, cerr := normalize(raw, nil)
	if cerr != nil {
		p := doc.at(cerr.at)
		cerr.Line, cerr.Column = p.line, p.col
		return nil, cerr
	}
	doc.tree = tree
	return doc, nil
}

// yamlError turns a goccy/go-yaml error into a ConfigError with the
// position the parser reports, without its multi-line source excerpt.
func yamlError(err error) *ConfigError {
	var ye yaml.Error
	if errors.As(err, &ye) {
		ce := &ConfigError{Message: "invalid YAML: " + ye.GetMessage()}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			ce.Line, ce.Column = tk.Position.Line, tk.Position.Column
		}
		return ce
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &ConfigError{Message: "invalid YAML: " + msg}
}

// yamlMeasure computes the size and nesting of a YAML node tree as it will
// be decoded, aliases expanded, in time linear in the text.
type yamlMeasure struct {
	anchors map[string]ast.Node
	memo    map[ast.Node][2]int
}

// measure returns the number of values under n and their nesting depth,
// both saturating just past their limits.
func (m *yamlMeasure) measure(n ast.Node, level int) (size, depth int) {
	if n == nil {
		return 0, 0
	}
	if level > MaxConfigDepth {
		return 1, MaxConfigDepth + 1
	}
	if r, ok := m.memo[n]; ok {
		return r[0], r[1]
	}
	size = 1
	add := func(child ast.Node) {
		s, d := m.measure(child, level+1)
		size = min(size+s, MaxConfigValues+1)
		depth = max(depth, d+1)
	}
	switch x := n.(type) {
	case *ast.AnchorNode:
		size, depth = m.measure(x.Value, level)
		// Registered after its value: an alias inside its own anchor
		// cannot recurse.
		if x.Name != nil && x.Name.GetToken() != nil {
			m.anchors[x.Name.GetToken().Value] = x.Value
		}
	case *ast.AliasNode:
		if x.Value != nil && x.Value.GetToken() != nil {
			if target, ok := m.anchors[x.Value.GetToken().Value]; ok {
				size, depth = m.measure(target, level)
			}
		}
	case *ast.TagNode:
		size, depth = m.measure(x.Value, level)
	case *ast.MappingNode:
		for _, mv := range x.Values {
			add(mv.Value)
		}
	case *ast.MappingValueNode:
		add(x.Value)
	case *ast.SequenceNode:
		for _, v := range x.Values {
			add(v)
		}
	}
	m.memo[n] = [2]int{size, depth}
	return size, depth
}

// yamlPositions records the position of every key and sequence item under n.
// Values reached only through aliases or merge keys get none.
func yamlPositions(n ast.Node, p path, out map[string]position) {
	switch x := n.(type) {
	case *ast.AnchorNode:
		yamlPositions(x.Value, p, out)
	case *ast.TagNode:
		yamlPositions(x.Value, p, out)
	case *ast.MappingNode:
		for _, mv := range x.Values {
			yamlPositions(mv, p, out)
		}
	case *ast.MappingValueNode:
		if x.Key == nil || x.Key.IsMergeKey() {
			return
		}
		tk := x.Key.GetToken()
		if tk == nil {
			return
		}
		child := p.child(tk.Value)
		if tk.Position != nil {
			out[child.String()] = position{tk.Position.Line, tk.Position.Column}
		}
		yamlPositions(x.Value, child, out)
	case *ast.SequenceNode:
		for i, v := range x.Values {
			child := p.child(i)
			if tk := v.GetToken(); tk != nil && tk.Position != nil {
				out[child.String()] = position{tk.Position.Line, tk.Position.Column}
			}
			yamlPositions(v, child, out)
		}
	}
}

// normalize converts a decoded YAML value into the tree shape JSON decoding
// produces, so both formats validate, merge and fingerprint alike.
func normalize(v any, p path) (any, *ConfigError) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			n, err := normalize(val, p.child(k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			n, err := normalize(val, p.child(i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, &ConfigError{Path: p.String(), at: p, Message: "infinity and NaN are not JSON numbers"}
		}
		return canonicalFloat(x), nil
	default:
		return nil, &ConfigError{Path: p.String(), at: p, Message: fmt.Sprintf("unsupported YAML value of type %T", v)}
	}
}

// canonicalNumber rewrites a JSON number into one spelling per value (1.0,
// 1e0 and 1 all become 1) so equal configs fingerprint equal. Integer
// literals too large for int64 keep their digits.
func canonicalNumber(text string) (json.Number, error) {
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return json.Number(strconv.FormatInt(i, 10)), nil
	}
	if isIntegerLiteral(text) {
		return json.Number(text), nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return "", fmt.Errorf("number %s is out of range", text)
	}
	return canonicalFloat(f), nil
}

func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func canonicalFloat(f float64) json.Number {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return json.Number(strconv.FormatInt(int64(f), 10))
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// parseJSON decodes data token by token, which lets it reject duplicate keys
// and record where every key and array item sits.
func parseJSON(data []byte) (*document, *ConfigError) {
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), positions: map[string]position{}}
	p.dec.UseNumber()
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &ConfigError{Message: "empty config"}
	}
	// A full scan first: its syntax errors carry exact offsets, which the
	// token stream's do not.
	var whole json.RawMessage
	if err := json.Unmarshal(data, &whole); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off := se.Offset - 1
			if strings.Contains(se.Error(), "unexpected end") {
				off = int64(len(data))
			}
			return nil, p.errorAt(off, "invalid JSON: "+se.Error())
		}
		return nil, p.errorAt(0, "invalid JSON: "+err.Error())
	}
	tree, err := p.value(nil, 0)
	if err != nil {
		return nil, err
	}
	return &document{tree: tree, positions: p.positions}, nil
}

type jsonParser struct {
	data      []byte
	dec       *json.Decoder
	positions map[string]position
	// values and pathBytes count toward MaxConfigValues and
	// MaxConfigPathBytes.
	values, pathBytes int
	// line, col and scanned are where positionOf last stopped (col counts
	// the characters before scanned on its line), so the positions of the
	// keys, in order, cost one pass over the text rather than one per key.
	line, col, scanned int64
}

// positionOf is offsetPosition for offsets that only grow, as those of a
// document's keys and items do.
func (p *jsonParser) positionOf(off int64) position {
	off = min(max(off, 0), int64(len(p.data)))
	if off < p.scanned || p.line == 0 {
		p.line, p.col, p.scanned = 1, 0, 0
	}
	for _, c := range p.data[p.scanned:off] {
		switch {
		case c == '\n':
			p.line, p.col = p.line+1, 0
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			p.col++
		}
	}
	p.scanned = off
	return position{line: int(p.line), col: int(p.col) + 1}
}

// place records where the value at child starts, within the limits.
func (p *jsonParser) place(child path, pos position) *ConfigError {
	key := child.String()
	p.pathBytes += len(key)
	if p.pathBytes > MaxConfigPathBytes {
		return limitError("bytes of key paths", MaxConfigPathBytes)
	}
	p.positions[key] = pos
	return nil
}

func (p *jsonParser) start() int64 {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (p *jsonParser) errorAt(off int64, msg string) *ConfigError {
	pos := offsetPosition(p.data, off)
	return &ConfigError{Line: pos.line, Column: pos.col, Message: msg}
}

// tokenError reports a failure of the token stream, which the full scan
// before it leaves no cause for; it is kept an error, never a panic.
func (p *jsonParser) tokenError(err error) *ConfigError {
	return p.errorAt(p.start(), "invalid JSON: "+err.Error())
}

func (p *jsonParser) value(at path, depth int) (any, *ConfigError) {
	if depth > MaxConfigDepth {
		return nil, p.errorAt(p.start(), fmt.Sprintf("config nests deeper than %d levels", MaxConfigDepth))
	}
	if p.values++; p.values > MaxConfigValues {
		return nil, limitError("values", MaxConfigValues)
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.tokenError(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return p.object(at, depth)
		}
		return p.array(at, depth)
	case json.Number:
		n, nerr := canonicalNumber(string(t))
		if nerr != nil {
			return nil, p.errorAt(p.dec.InputOffset()-int64(len(t)), nerr.Error())
		}
		return n, nil
	default:
		return t, nil
	}
}

func (p *jsonParser) object(at path, depth int) (any, *ConfigError) {
	out := map[string]any{}
	for p.dec.More() {
		off := p.start()
		tok, err := p.dec.Token()
		if err != nil {
			return nil, p.tokenError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, p.errorAt(off, "invalid JSON: object key must be a string")
		}
		child := at.child(key)
		pos := p.positionOf(off)
		if _, dup := out[key]; dup {
			first := p.positions[child.String()]
			return nil, &ConfigError{Line: pos.line, Column: pos.col, Path: child.String(),
				Message: fmt.Sprintf("duplicate key %q (first at line %d, column %d)", key, first.line, first.col)}
		}
		if cerr := p.place(child, pos); cerr != nil {
			return nil, cerr
		}
		v, cerr := p.value(child, depth+1)
		if cerr != nil {
			return nil, cerr
		}
		out[key] = v
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, p.tokenError(err)
	}
	return out, nil
}

func (p *jsonParser) array(at path, depth int) (any, *ConfigError) {
	out := []any{}
	for p.dec.More() {
		child := at.child(len(out))
		if cerr := p.place(child, p.positionOf(p.start())); cerr != nil {
			return nil, cerr
		}
		v, cerr := p.value(child, depth+1)
		if cerr != nil {
			return nil, cerr
		}
		out = append(out, v)
	}
	if _, err := p.dec.Token(); err != nil {
		return nil, p.tokenError(err)
	}
	return out, nil
}

// offsetPosition converts a byte offset into a 1-based line and a column
// counted in characters.
func offsetPosition(data []byte, off int64) position {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return position{line: line, col: utf8.RuneCount(before[lineStart:]) + 1}
}
