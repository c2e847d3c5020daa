package pipeline

// Document is a parsed config document, for code that works on a config's
// text before it is loaded (a template registry binding parameters into
// one): its value tree and where each value stands in the text.
type Document struct {
	d *document
}

// ParseDocument parses a config document within the limits every config is
// held to (Load's own parser). A document it cannot parse is a *ConfigError
// with its line and column.
func ParseDocument(data []byte, format Format) (*Document, error) {
	d, cerr := parsedDocs.parse(data, format)
	if cerr != nil {
		return nil, cerr
	}
	return &Document{d: d}, nil
}

// Tree is the document's value: map[string]any, []any, string, bool,
// json.Number or nil. Documents share their trees: it must not be changed.
func (d *Document) Tree() any { return d.d.tree }

// Problem is a problem at the path elems (object keys as strings, array
// indexes as ints), placed where that value stands in the text.
func (d *Document) Problem(msg string, elems ...any) *ConfigError {
	p := path(elems)
	pos := d.d.at(p)
	return &ConfigError{Path: p.String(), Line: pos.line, Column: pos.col, Message: msg, at: p}
}

// Place moves problems a load found in another rendering of this document
// (with the same paths, such as its JSON after a rewrite of some values) to
// where their values stand in this document's text.
func (d *Document) Place(problems []*ConfigError) {
	for _, e := range problems {
		if e.Set != "" || e.File == "defaults" {
			continue
		}
		p := e.at
		if p == nil && e.Path != "" {
			continue
		}
		pos := d.d.at(p)
		e.Line, e.Column = pos.line, pos.col
	}
}

// PathString renders a path the way problems name it:
// pipeline.source.config.table, matrix[2].id.
func PathString(elems ...any) string { return path(elems).String() }

// DocumentSchema is a compiled JSON Schema that documents other than pipeline
// configs are checked against (a server's triggers file), so their problems
// read like a config's: each at its path, line and column, an unknown key
// with the key it was probably meant to be.
type DocumentSchema struct {
	s *schemaDoc
}

// CompileSchema compiles a self-contained JSON Schema document (draft
// 2020-12 unless it names another with $schema; a $ref outside it is an
// error).
func CompileSchema(name string, raw []byte) (*DocumentSchema, error) {
	s, err := compileSchema(name, raw)
	if err != nil {
		return nil, err
	}
	return &DocumentSchema{s: s}, nil
}

// Check validates the document against s: nil when it conforms, else every
// failing value as a problem placed where it stands in the text, in
// document order (ConfigProblems lists them).
func (d *Document) Check(s *DocumentSchema) error {
	var p problems
	s.s.check(d.d.tree, nil, func(at path, msg string) {
		pos := d.d.at(at)
		p.add(&ConfigError{Path: at.String(), Line: pos.line, Column: pos.col, Message: msg, at: at})
	})
	return p.err()
}
