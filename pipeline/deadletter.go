package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// FileOpener opens the files the executor writes itself, the dead-letter
// file; faucet serve's is confined to its file roots (*sdk.Files is one).
type FileOpener interface {
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	Stat(name string) (fs.FileInfo, error)
	MkdirAll(dir string, perm os.FileMode) error
	Remove(name string) error
	// Abs is the absolute path a config's path names.
	Abs(name string) (string, error)
}

// osFiles opens paths as given.
type osFiles struct{}

func (osFiles) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFiles) Stat(name string) (fs.FileInfo, error)       { return os.Stat(name) }
func (osFiles) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFiles) Remove(name string) error                    { return os.Remove(name) }
func (osFiles) Abs(name string) (string, error)             { return filepath.Abs(name) }

// Envelope is a dead letter: one line of the dead-letter file. Its fields
// are the Rust faucet's (payload, error, reason, sink, pipeline, row,
// record_index, ts_ms), so its dlq tools read faucet's files, plus the
// connector, the run and the attempts.
type Envelope struct {
	// Payload is the refused record.
	Payload json.RawMessage `json:"payload"`
	Error   EnvelopeError   `json:"error"`
	// Reason is the stage that refused it: "partial", a sink's refusal of
	// one record.
	Reason    string `json:"reason"`
	Connector string `json:"connector"`
	// Sink is the connector's name too, under the Rust faucet's key.
	Sink     string `json:"sink"`
	Pipeline string `json:"pipeline"`
	// Row is the invocation's row id.
	Row   string `json:"row"`
	RunID string `json:"run_id,omitempty"`
	// RecordIndex is the record's position in its batch.
	RecordIndex int `json:"record_index"`
	// Attempt is how many times the record was tried on its own.
	Attempt int   `json:"attempt"`
	TsMS    int64 `json:"ts_ms"`
}

// EnvelopeError says why a record was refused.
type EnvelopeError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// ReasonPartial is the reason of a record a sink refused on its own.
const ReasonPartial = "partial"

// deadLetters handles what one attempt's sink refuses under the plan's
// DeadLetter policy. Dead letters go to a session file beside the
// dead-letter file as they arrive; once the sink has committed they are
// appended to the dead-letter file in one piece, so the file never holds
// the letters of an attempt whose records were rolled back (its retry would
// add them again), and a letter is on disk before the attempt ends.
type deadLetters struct {
	e   *executor
	inv *Invocation
	p   *DeadLetter

	mu      sync.Mutex
	tmp     *os.File
	tmpName string
	err     error
	letters int64
	dropped int64
}

// newDeadLetters is the dead-letter handling of an attempt of inv; nil
// when the plan lets a refused record fail the invocation.
func (e *executor) newDeadLetters(inv *Invocation) *deadLetters {
	p := e.plan.DeadLetter
	if p == nil || p.Action == PoisonFail {
		return nil
	}
	return &deadLetters{e: e, inv: inv, p: p}
}

// attach returns ctx asking the attempt's sink sessions for the records
// they refuse.
func (d *deadLetters) attach(ctx context.Context) context.Context {
	r := SessionReportFrom(ctx)
	r.Policy = &RecordPolicy{MaxAttempts: max(1, d.p.MaxRowAttempts)}
	r.Rejected = d.rejected
	r.Unrefused = func(reason string) {
		d.e.opts.Logger.Warn("resilience.poison does not apply: "+reason+"; a record it fails on fails the invocation", "row_id", d.inv.RowID)
	}
	return WithSessionReport(ctx, r)
}

func (d *deadLetters) files() FileOpener {
	if d.e.opts.Files != nil {
		return d.e.opts.Files
	}
	return osFiles{}
}

// rejected takes one refused record; it may be called from any goroutine.
func (d *deadLetters) rejected(r Rejection) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p.Action == PoisonDrop {
		d.dropped++
		if d.dropped <= 10 {
			d.e.opts.Logger.Warn("a record the sink refused was dropped", "row_id", d.inv.RowID, "sink", d.inv.Sink.Type,
				"batch", r.Seq, "record", r.Index, "attempts", r.Attempts, "error", d.e.redact.String(r.Error))
		}
		return
	}
	if d.err != nil {
		return
	}
	payload := json.RawMessage(r.Record)
	if !json.Valid(payload) {
		payload, _ = json.Marshal(string(r.Record))
	}
	line, err := json.Marshal(Envelope{
		Payload: payload, Error: EnvelopeError{Kind: "Sink", Message: d.e.redact.String(r.Error)}, Reason: ReasonPartial,
		Connector: d.inv.Sink.Type, Sink: d.inv.Sink.Type, Pipeline: d.e.plan.Name, Row: d.inv.RowID, RunID: d.e.opts.RunID,
		RecordIndex: r.Index, Attempt: r.Attempts, TsMS: time.Now().UnixMilli(),
	})
	if err == nil && d.tmp == nil {
		d.tmp, d.tmpName, err = d.createTemp()
	}
	if err == nil {
		_, err = d.tmp.Write(append(line, '\n'))
	}
	if err != nil {
		d.err = fmt.Errorf("keep a dead letter beside %s: %w", d.p.Path, err)
		return
	}
	d.letters++
}

// createTemp creates the session file of the dead letters, beside the
// dead-letter file, readable by faucet's user only: a letter holds a whole
// record.
func (d *deadLetters) createTemp() (*os.File, string, error) {
	files := d.files()
	abs, err := files.Abs(d.p.Path)
	if err != nil {
		return nil, "", err
	}
	if err := files.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, "", err
	}
	dir, base := filepath.Split(abs)
	for range 100 {
		name := filepath.Join(dir, "."+base+".faucet-letters-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := files.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, os.ErrExist) {
			return f, name, err
		}
	}
	return nil, "", fmt.Errorf("no free temporary name beside %s", abs)
}

// commit appends the attempt's dead letters to the dead-letter file once
// its sink has committed, and returns how many records were dead-lettered
// and dropped. A letter that cannot be appended is kept in the session
// file, which the error names.
func (d *deadLetters) commit() (letters, dropped int64, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		d.close(false)
		return 0, d.dropped, d.err
	}
	if d.tmp == nil {
		return 0, d.dropped, nil
	}
	if err := d.append(); err != nil {
		d.close(true)
		return 0, d.dropped, fmt.Errorf("the sink committed, but %d refused record(s) could not be appended to the dead-letter file %s (they are kept in %s): %w",
			d.letters, d.p.Path, d.tmpName, err)
	}
	d.close(false)
	return d.letters, d.dropped, nil
}

// appendLocks serialise the appends of one process to each dead-letter
// file; an advisory lock on the file serialises those of several.
var appendLocks sync.Map // absolute path → *sync.Mutex

func (d *deadLetters) append() error {
	files := d.files()
	abs, err := files.Abs(d.p.Path)
	if err != nil {
		return err
	}
	mu, _ := appendLocks.LoadOrStore(abs, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	_, statErr := files.Stat(abs)
	out, err := files.OpenFile(abs, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := lockFile(out); err != nil {
		return err
	}
	if _, err := d.tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.Copy(out, d.tmp); err != nil {
		return err
	}
	fi, err := out.Stat()
	if err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if report := d.e.opts.Output; report != nil {
		report(d.inv.RowID, OutputFile{Path: abs, Size: fi.Size(), Existed: statErr == nil})
	}
	return nil
}

// discard forgets the letters of an attempt whose sink rolled back.
func (d *deadLetters) discard() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.close(false)
}

// close closes the session file and removes it unless keep.
func (d *deadLetters) close(keep bool) {
	if d.tmp == nil {
		return
	}
	d.tmp.Close()
	if !keep {
		_ = d.files().Remove(d.tmpName)
	}
	d.tmp = nil
}
