// Package dlq is the built-in dead-letter source: it reads the dead letters
// of a dead-letter file (or of the files a glob names) and emits each one's
// payload, the record a sink refused, so a replay feeds them to a sink
// again. A line that is no dead letter is skipped and counted; a file with
// no dead letter at all is refused, since replaying it would replay
// nothing faucet wrote.
package dlq

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/files"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connector is the dlq connector.
type Connector struct{}

const sourceSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "x-faucet-file": "read", "description": "A dead-letter file (resilience.dlq), or a glob naming several."},
    "reason": {"enum": ["partial", "dlq_all", "quality", "schema_drift", "contract"], "description": "Only the dead letters with this reason."}
  }
}`

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:         "dlq",
		Version:      "1.0.0",
		Description:  "The records of a dead-letter file, for a replay into a sink.",
		SourceSchema: json.RawMessage(sourceSchema),
	}
}

type config struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Letter is the part of a dead letter a replay reads.
type Letter struct {
	Payload json.RawMessage `json:"payload"`
	Reason  string          `json:"reason"`
}

// Parse reads one line of a dead-letter file: ok is false for a line that
// is no dead letter (not a JSON object with an object payload).
func Parse(line []byte) (Letter, bool) {
	var l Letter
	if json.Unmarshal(line, &l) != nil || len(l.Payload) == 0 || l.Payload[0] != '{' {
		return Letter{}, false
	}
	return l, true
}

// Read emits the payload of every dead letter, in file and line order.
func (Connector) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	var cfg config
	if err := sdk.DecodeConfig(req.Config, &cfg); err != nil {
		return err
	}
	fs := sdk.FilesFrom(ctx)
	parts, err := files.Parts(fs, cfg.Path, nil)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := readFile(ctx, fs, p, cfg.Reason, w); err != nil {
			return err
		}
	}
	return nil
}

func readFile(ctx context.Context, fs *sdk.Files, p files.Part, reason string, w *sdk.BatchWriter) error {
	r, err := files.Open(fs, p)
	if err != nil {
		return err
	}
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	letters, others := 0, 0
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			l, ok := Parse(line)
			switch {
			case !ok:
				others++
			case reason == "" || l.Reason == reason:
				letters++
				if aerr := w.AppendRaw(l.Payload); aerr != nil {
					return fmt.Errorf("%s: line %d: %w", p.File, n, aerr)
				}
			default:
				letters++
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p.File, err)
		}
	}
	if letters == 0 && others > 0 {
		return fmt.Errorf("%s is not a dead-letter file: none of its %d line(s) is a dead letter", p.File, others)
	}
	if others > 0 {
		slog.Warn("lines that are no dead letters were skipped", "file", p.File, "lines", others)
	}
	return nil
}

// Check probes that the files can be read.
func (Connector) Check(ctx context.Context, _ sdk.Role, config json.RawMessage) ([]sdk.CheckItem, error) {
	var cfg struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	return files.CheckRead(sdk.FilesFrom(ctx), cfg.Path), nil
}
