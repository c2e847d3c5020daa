// Package stdout is the built-in sink that prints records to faucet's
// standard output as JSON Lines, for trying a pipeline out or piping it on.
package stdout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// FDEnv names the environment variable through which the plugin host tells
// the stdout sink which inherited file descriptor is faucet's own standard
// output. Writing there directly (not through the plugin's stdout, which
// the plugin protocol relays asynchronously) means an acknowledged batch is
// already in faucet's output.
const FDEnv = "FAUCET_STDOUT_FD"

// Connector is the stdout connector.
type Connector struct{}

const sinkSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "pretty": {"type": "boolean", "default": false, "description": "Indent each record over several lines instead of one line per record."}
  }
}`

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:        "stdout",
		Version:     "1.0.0",
		Description: "Prints records to faucet's standard output as JSON Lines. Printed records cannot be taken back when a run fails.",
		SinkSchema:  json.RawMessage(sinkSchema),
		// A session prints each batch as it comes and has nothing to take
		// back on abort, so sessions of one run's shards cannot undo one
		// another's records.
		IndependentSessions: true,
	}
}

type config struct {
	Pretty bool `json:"pretty"`
}

// Open starts printing.
func (Connector) Open(_ context.Context, raw json.RawMessage) (sdk.Writer, error) {
	var cfg config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return nil, err
	}
	return &writer{w: bufio.NewWriterSize(output(), 256<<10), pretty: cfg.Pretty}, nil
}

// output is faucet's standard output: the inherited descriptor FDEnv names,
// else this process's. The *os.File is made once for the process and kept:
// a File closes its descriptor when it is garbage collected, so one made per
// session would close the descriptor under the plugin's later sessions.
var output = sync.OnceValue(func() *os.File {
	if fd, err := strconv.Atoi(os.Getenv(FDEnv)); err == nil {
		return os.NewFile(uintptr(fd), "stdout")
	}
	return os.Stdout
})

type writer struct {
	w      *bufio.Writer
	pretty bool
	buf    bytes.Buffer
}

// Write prints the batch and flushes it, so the acknowledgement means the
// records were handed to the output.
func (w *writer) Write(_ context.Context, b sdk.Batch) error {
	if !w.pretty {
		if _, err := w.w.Write(b.Records); err != nil {
			return err
		}
		return w.w.Flush()
	}
	for rec := range b.All() {
		w.buf.Reset()
		if err := json.Indent(&w.buf, rec, "", "  "); err != nil {
			return err
		}
		w.buf.WriteByte('\n')
		if _, err := w.w.Write(w.buf.Bytes()); err != nil {
			return err
		}
	}
	return w.w.Flush()
}

func (w *writer) Close(context.Context) error { return w.w.Flush() }

// Abort cannot unprint what was printed.
func (w *writer) Abort(context.Context) error { return nil }
