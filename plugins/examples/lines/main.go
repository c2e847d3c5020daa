// Command faucet-lines is an example third-party faucet connector, built as
// its own program against nothing but the faucet SDK. It reads and writes
// plain text files: as a source, every line becomes {"n": 1, "line": "…"};
// as a sink, one field of every record becomes a line.
//
// Install it by building it into a faucet plugin directory:
//
//	go build -o ~/.local/share/faucet/plugins/faucet-lines .
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

func main() { sdk.Serve(lines{}) }

type lines struct{}

func (lines) Spec() sdk.Spec {
	return sdk.Spec{
		Name:        "lines",
		Version:     "0.1.0",
		Description: "Plain text files, one record per line.",
		SourceSchema: json.RawMessage(`{
		  "type": "object", "additionalProperties": false, "required": ["path"],
		  "properties": {"path": {"type": "string", "minLength": 1}}
		}`),
		SinkSchema: json.RawMessage(`{
		  "type": "object", "additionalProperties": false, "required": ["path"],
		  "properties": {
		    "path": {"type": "string", "minLength": 1},
		    "field": {"type": "string", "default": "line", "description": "The record field written as the line."}
		  }
		}`),
		WriteModes: []string{"overwrite"},
	}
}

type sourceConfig struct {
	Path string `json:"path"`
}

func (lines) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	var cfg sourceConfig
	if err := sdk.DecodeConfig(req.Config, &cfg); err != nil {
		return err
	}
	// Every file goes through the call's file access: under faucet serve
	// it keeps the path within the server's file roots.
	f, err := sdk.FilesFrom(ctx).Open(cfg.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, sdk.MaxRecordBytes)
	for n := 1; sc.Scan(); n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := w.AppendFunc(func(dst []byte) ([]byte, error) {
			dst = append(dst, `{"n":`...)
			dst = strconv.AppendInt(dst, int64(n), 10)
			dst = append(dst, `,"line":`...)
			dst = sdk.AppendString(dst, sc.Text())
			return append(dst, '}'), nil
		})
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// Datasets tells faucet's catalog which file a session read or wrote. It is
// optional (a connector without it moves data all the same): faucet calls it
// at the end of a session when it keeps a catalog. A file read back by this
// connector always has the same two columns, so the schema is declared
// rather than left to what faucet inferred from the records (req.Observed).
func (lines) Datasets(ctx context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	var cfg struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(req.Config, &cfg); err != nil {
		return nil, err
	}
	uri, err := sdk.FileURI(ctx, cfg.Path)
	if err != nil {
		return nil, err
	}
	schema := &sdk.Schema{Columns: []sdk.Column{{Name: "n", Type: sdk.TypeInteger}, {Name: "line", Type: sdk.TypeString}}}
	return []sdk.Dataset{{URI: uri, Schema: schema}}, nil
}

type sinkConfig struct {
	Path  string `json:"path"`
	Field string `json:"field"`
}

func (lines) Open(ctx context.Context, config json.RawMessage) (sdk.Writer, error) {
	cfg := sinkConfig{Field: "line"}
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	// Logs reach faucet's own log, tagged with this connector's name; so
	// does anything printed to standard error.
	slog.Info("writing lines", "path", cfg.Path, "field", cfg.Field)
	fmt.Fprintln(os.Stderr, "opened", cfg.Path)
	files := sdk.FilesFrom(ctx)
	tmp := cfg.Path + ".partial"
	f, err := files.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, err
	}
	return &writer{cfg: cfg, files: files, tmp: tmp, f: f, w: bufio.NewWriter(f)}, nil
}

type writer struct {
	cfg   sinkConfig
	files *sdk.Files
	tmp   string
	f     *os.File
	w     *bufio.Writer
}

func (w *writer) Write(_ context.Context, b sdk.Batch) error {
	for rec := range b.All() {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(rec, &fields); err != nil {
			return err
		}
		raw, ok := fields[w.cfg.Field]
		if !ok {
			return fmt.Errorf("record has no field %q", w.cfg.Field)
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		w.w.WriteString(s)
		w.w.WriteByte('\n')
	}
	return nil
}

func (w *writer) Close(ctx context.Context) error {
	if err := w.w.Flush(); err != nil {
		return err
	}
	fi, err := w.f.Stat()
	if err != nil {
		return err
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	existed := false
	if _, err := w.files.Stat(w.cfg.Path); err == nil {
		existed = true
	}
	if err := w.files.Rename(w.tmp, w.cfg.Path); err != nil {
		return err
	}
	// faucet serve keeps a ledger of the files its runs wrote.
	if abs, err := w.files.Abs(w.cfg.Path); err == nil {
		sdk.ReportOutput(ctx, sdk.OutputFile{Path: abs, Size: fi.Size(), Existed: existed})
	}
	return nil
}

func (w *writer) Abort(context.Context) error {
	w.f.Close()
	return w.files.Remove(w.tmp)
}
