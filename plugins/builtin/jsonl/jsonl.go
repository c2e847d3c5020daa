// Package jsonl is the built-in JSON Lines connector: a source reading one
// JSON object per line from files or a glob, shardable by file and by line
// ranges, and a sink writing records through unchanged.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/files"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connector is the jsonl connector.
type Connector struct{}

const sourceSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "x-faucet-file": "read", "description": "A file, or a glob naming several (read in name order)."}
  }
}`

const sinkSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "x-faucet-file": "write", "examples": ["out/records.jsonl"], "description": "The file to write; missing directories are created."},
    ` + files.SinkProperties + `
  }
}`

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:         "jsonl",
		Version:      "1.0.0",
		Description:  "JSON Lines files: one JSON object per line.",
		SourceSchema: json.RawMessage(sourceSchema),
		SinkSchema:   json.RawMessage(sinkSchema),
		Shardable:    true,
		WriteModes:   files.WriteModes,
	}
}

type sourceConfig struct {
	Path string `json:"path"`
}

// Shards splits the input by file, or one file by line ranges.
func (Connector) Shards(ctx context.Context, config json.RawMessage, count int) ([]sdk.Shard, error) {
	var cfg sourceConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	return files.Shards(sdk.FilesFrom(ctx), cfg.Path, count, files.LineStarts)
}

// Datasets names the file (or glob) a session read or wrote, with the
// schema its records showed.
func (Connector) Datasets(ctx context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	return files.Datasets(ctx, req)
}

// Read emits every non-blank line of the input as a record, rejecting lines
// that are not JSON objects with their file and line number.
func (Connector) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	var cfg sourceConfig
	if err := sdk.DecodeConfig(req.Config, &cfg); err != nil {
		return err
	}
	fs := sdk.FilesFrom(ctx)
	parts, err := files.Parts(fs, cfg.Path, req.Shard)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := readPart(ctx, fs, p, w); err != nil {
			return err
		}
	}
	return nil
}

func readPart(ctx context.Context, fs *sdk.Files, p files.Part, w *sdk.BatchWriter) error {
	r, err := files.Open(fs, p)
	if err != nil {
		return err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	for line := 1; ; line++ {
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("read %s: %w", p.File, err)
		}
		rec := bytes.TrimSpace(b)
		if len(rec) > 0 {
			if rec[0] != '{' || !json.Valid(rec) {
				return fmt.Errorf("%s: line %d: not a JSON object", p.File, line)
			}
			if aerr := w.AppendRaw(rec); aerr != nil {
				return fmt.Errorf("%s: line %d: %w", p.File, line, aerr)
			}
		}
		if err == io.EOF {
			return nil
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
	Path string `json:"path"`
	files.Options
}

// Open starts writing the output file.
func (Connector) Open(ctx context.Context, config json.RawMessage) (sdk.Writer, error) {
	var cfg sinkConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return nil, err
	}
	out, err := files.Create(sdk.FilesFrom(ctx), cfg.Path, cfg.Options)
	if err != nil {
		return nil, err
	}
	return &writer{out: out}, nil
}

type writer struct {
	out *files.Output
}

// Write copies the batch through: it already is JSON Lines.
func (w *writer) Write(_ context.Context, b sdk.Batch) error {
	_, err := w.out.Write(b.Records)
	return err
}

func (w *writer) Close(ctx context.Context) error { return w.out.Commit(ctx) }

func (w *writer) Abort(context.Context) error { return w.out.Abort() }
