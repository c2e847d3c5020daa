// Package csv is the built-in CSV connector: a source turning each row of
// one or more files into a JSON object (values as strings, keys from the
// header or the config), shardable by file and by byte ranges that respect
// quoted newlines, and a sink writing records as CSV rows.
package csv

import (
	"bufio"
	"bytes"
	"context"
	stdcsv "encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/files"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connector is the csv connector.
type Connector struct{}

const sourceSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "x-faucet-file": "read", "description": "A file, or a glob naming several (read in name order, all with the same layout)."},
    "delimiter": {"type": "string", "minLength": 1, "maxLength": 1, "default": ",", "description": "The field separator, one character."},
    "header": {"type": "boolean", "default": true, "description": "The first row of each file names the columns."},
    "columns": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true, "minItems": 1, "description": "Column names; they replace the header's. Without a header and without columns, columns are named column_1, column_2, …"},
    "lazy_quotes": {"type": "boolean", "default": false, "description": "Accept a quote inside an unquoted field and a lone quote in a quoted one."}
  }
}`

const sinkSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "x-faucet-file": "write", "examples": ["out/records.csv"], "description": "The file to write; missing directories are created."},
    "delimiter": {"type": "string", "minLength": 1, "maxLength": 1, "default": ","},
    "header": {"type": "boolean", "default": true, "description": "Write a header row (in append mode only when the file is empty)."},
    "columns": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true, "minItems": 1, "description": "Which record fields to write, in order. Default: the fields of the first record, in its order; a later record with another field is an error."},
    "quoting": {"enum": ["minimal", "all"], "default": "minimal", "description": "minimal quotes a field only when it must; all quotes every field."},
    ` + files.SinkProperties + `
  }
}`

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:         "csv",
		Version:      "1.0.0",
		Description:  "CSV files (RFC 4180), with a configurable delimiter and header.",
		SourceSchema: json.RawMessage(sourceSchema),
		SinkSchema:   json.RawMessage(sinkSchema),
		Shardable:    true,
		WriteModes:   files.WriteModes,
	}
}

type sourceConfig struct {
	Path       string   `json:"path"`
	Delimiter  string   `json:"delimiter"`
	Header     *bool    `json:"header"`
	Columns    []string `json:"columns"`
	LazyQuotes bool     `json:"lazy_quotes"`
}

func decodeSource(config json.RawMessage) (sourceConfig, rune, error) {
	var cfg sourceConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, 0, err
	}
	delim, err := delimiter(cfg.Delimiter)
	return cfg, delim, err
}

func delimiter(s string) (rune, error) {
	if s == "" {
		return ',', nil
	}
	r, size := utf8.DecodeRuneInString(s)
	if size != len(s) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
		return 0, fmt.Errorf("delimiter %q: must be one character other than a quote or newline", s)
	}
	return r, nil
}

// Shards splits the input by file, or one file by byte ranges cut only at
// newlines outside quoted fields, so every row lands in exactly one shard.
func (Connector) Shards(ctx context.Context, config json.RawMessage, count int) ([]sdk.Shard, error) {
	cfg, _, err := decodeSource(config)
	if err != nil {
		return nil, err
	}
	return files.Shards(sdk.FilesFrom(ctx), cfg.Path, count, files.QuotedLineStarts('"'))
}

// Datasets names the file (or glob) a session read or wrote, with the
// schema its records showed.
func (Connector) Datasets(ctx context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	return files.Datasets(ctx, req)
}

// Read emits one record per row.
func (Connector) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	cfg, delim, err := decodeSource(req.Config)
	if err != nil {
		return err
	}
	fs := sdk.FilesFrom(ctx)
	parts, err := files.Parts(fs, cfg.Path, req.Shard)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := readPart(ctx, fs, cfg, delim, p, w); err != nil {
			return err
		}
	}
	return nil
}

func newReader(r io.Reader, cfg sourceConfig, delim rune) *stdcsv.Reader {
	cr := stdcsv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.Comma = delim
	cr.LazyQuotes = cfg.LazyQuotes
	cr.ReuseRecord = true
	return cr
}

// header returns the column names of part p: from its first record when
// the config says there is a header (a byte range after a file's first one
// reads it from the file's start), replaced by the config's columns if set.
// first reads the first record of a reader as fields.
func header(fs *sdk.Files, cfg sourceConfig, p files.Part, first func(io.Reader) ([]string, error), r io.Reader) ([]string, error) {
	if cfg.Header != nil && !*cfg.Header {
		return cfg.Columns, nil
	}
	if p.Start > 0 {
		whole, err := files.Open(fs, files.Part{File: p.File})
		if err != nil {
			return nil, err
		}
		defer whole.Close()
		r = whole
	}
	names, err := first(r)
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", p.File, err)
	}
	if len(cfg.Columns) > 0 {
		if len(cfg.Columns) != len(names) {
			return nil, fmt.Errorf("%s: the header has %d columns but columns names %d", p.File, len(names), len(cfg.Columns))
		}
		names = cfg.Columns
	}
	return names, nil
}

// encodeKeys returns the encoded `"name":` prefix of every column.
func encodeKeys(names []string, file string) ([][]byte, error) {
	seen := make(map[string]bool, len(names))
	out := make([][]byte, len(names))
	for i, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("%s: column %q appears twice", file, n)
		}
		seen[n] = true
		out[i] = append(sdk.AppendString(nil, n), ':')
	}
	return out, nil
}

// readPart reads one file or byte range: through the fast scanner for a
// one-byte delimiter without lazy quotes, through encoding/csv otherwise.
func readPart(ctx context.Context, fs *sdk.Files, cfg sourceConfig, delim rune, p files.Part, w *sdk.BatchWriter) error {
	r, err := files.Open(fs, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if delim >= utf8.RuneSelf || cfg.LazyQuotes {
		return readStd(ctx, fs, cfg, delim, p, r, w)
	}
	sc := newScanner(r, byte(delim), p.File)
	names, err := header(fs, cfg, p, func(hr io.Reader) ([]string, error) {
		hs := sc
		if hr != r {
			hs = newScanner(hr, byte(delim), p.File)
		}
		rec, _, err := hs.next()
		if err != nil {
			return nil, err
		}
		cr := newReader(bytes.NewReader(rec), cfg, delim)
		return cr.Read()
	}, r)
	if err != nil {
		return err
	}
	keys, err := encodeKeys(names, p.File)
	if err != nil {
		return err
	}
	sc.autoKeys = len(keys) == 0
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rec, line, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.AppendFunc(func(dst []byte) ([]byte, error) { return sc.appendObject(dst, &keys, rec, line) }); err != nil {
			return err
		}
	}
}

// readStd is readPart through encoding/csv.
func readStd(ctx context.Context, fs *sdk.Files, cfg sourceConfig, delim rune, p files.Part, r io.Reader, w *sdk.BatchWriter) error {
	cr := newReader(r, cfg, delim)
	names, err := header(fs, cfg, p, func(hr io.Reader) ([]string, error) {
		if hr == r {
			return cr.Read()
		}
		return newReader(hr, cfg, delim).Read()
	}, r)
	if err != nil {
		return err
	}
	names = append([]string(nil), names...)
	cols, err := encodeKeys(names, p.File)
	if err != nil {
		return err
	}
	named := len(cols) > 0
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p.File, err)
		}
		if !named {
			for i := range row {
				cols = append(cols, append(sdk.AppendString(nil, "column_"+strconv.Itoa(i+1)), ':'))
			}
			named = true
		}
		if len(row) != len(cols) {
			line, _ := cr.FieldPos(0)
			return fmt.Errorf("%s: record on line %d has %d fields, want %d", p.File, line, len(row), len(cols))
		}
		err = w.AppendFunc(func(dst []byte) ([]byte, error) {
			dst = append(dst, '{')
			for i, v := range row {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, cols[i]...)
				dst = sdk.AppendString(dst, v)
			}
			return append(dst, '}'), nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", p.File, err)
		}
	}
}

// Check probes that the input can be read, or that the output's directory
// can be written.
func (Connector) Check(ctx context.Context, role sdk.Role, config json.RawMessage) ([]sdk.CheckItem, error) {
	var cfg struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	if role == sdk.RoleSource {
		return files.CheckRead(sdk.FilesFrom(ctx), cfg.Path), nil
	}
	return files.CheckWrite(sdk.FilesFrom(ctx), cfg.Path), nil
}

type sinkConfig struct {
	Path      string   `json:"path"`
	Delimiter string   `json:"delimiter"`
	Header    *bool    `json:"header"`
	Columns   []string `json:"columns"`
	Quoting   string   `json:"quoting"`
	files.Options
}

// Open starts writing the output file.
func (Connector) Open(ctx context.Context, config json.RawMessage) (sdk.Writer, error) {
	var cfg sinkConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	delim, err := delimiter(cfg.Delimiter)
	if err != nil {
		return nil, err
	}
	out, err := files.Create(sdk.FilesFrom(ctx), cfg.Path, cfg.Options)
	if err != nil {
		return nil, err
	}
	return &writer{
		out:     out,
		delim:   delim,
		header:  (cfg.Header == nil || *cfg.Header) && out.Empty(),
		columns: cfg.Columns,
		all:     cfg.Quoting == "all",
	}, nil
}

type writer struct {
	out     *files.Output
	delim   rune
	header  bool
	columns []string
	index   map[string]int
	all     bool
	fields  []sdk.Field
	row     []string
	line    []byte
}

// Write appends one CSV row per record.
func (w *writer) Write(_ context.Context, b sdk.Batch) error {
	for rec := range b.All() {
		var err error
		if w.fields, err = sdk.AppendFields(w.fields[:0], rec); err != nil {
			return err
		}
		if w.index == nil {
			if err := w.start(); err != nil {
				return err
			}
		}
		for i := range w.row {
			w.row[i] = ""
		}
		for _, f := range w.fields {
			i, ok := w.index[f.Key]
			if !ok {
				if w.index[""] == -1 {
					continue
				}
				return fmt.Errorf("record has field %q, which is not among the CSV columns; set columns to choose which fields to write", f.Key)
			}
			v, err := text(f.Value)
			if err != nil {
				return fmt.Errorf("field %q: %w", f.Key, err)
			}
			w.row[i] = v
		}
		if err := w.writeRow(w.row); err != nil {
			return err
		}
	}
	return nil
}

// start fixes the columns from the config or the first record and writes
// the header. With configured columns, other fields are ignored (marked by
// the "" → -1 entry).
func (w *writer) start() error {
	w.index = make(map[string]int)
	if len(w.columns) > 0 {
		w.index[""] = -1
	} else {
		for _, f := range w.fields {
			w.columns = append(w.columns, f.Key)
		}
	}
	for i, c := range w.columns {
		w.index[c] = i
	}
	w.row = make([]string, len(w.columns))
	if w.header {
		return w.writeRow(w.columns)
	}
	return nil
}

// text is a JSON value as a CSV field: strings unquoted, null empty, the
// rest (numbers, booleans, objects, arrays) as their JSON text.
func text(v json.RawMessage) (string, error) {
	switch {
	case len(v) == 0 || string(v) == "null":
		return "", nil
	case v[0] == '"':
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	}
	return string(v), nil
}

func (w *writer) writeRow(fields []string) error {
	line := w.line[:0]
	for i, f := range fields {
		if i > 0 {
			line = utf8.AppendRune(line, w.delim)
		}
		if w.all || w.needsQuotes(f) {
			line = append(line, '"')
			line = append(line, strings.ReplaceAll(f, `"`, `""`)...)
			line = append(line, '"')
		} else {
			line = append(line, f...)
		}
	}
	line = append(line, '\n')
	w.line = line
	_, err := w.out.Write(line)
	return err
}

func (w *writer) needsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f[0] == ' ' || f[0] == '\t' || strings.ContainsRune(f, w.delim) {
		return true
	}
	return strings.ContainsAny(f, "\"\r\n")
}

func (w *writer) Close(ctx context.Context) error { return w.out.Commit(ctx) }

func (w *writer) Abort(context.Context) error { return w.out.Abort() }
