package files

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// The write modes of the file sinks.
const (
	// ModeOverwrite replaces the file when the session commits; until then
	// the records go to a temporary file beside it, so readers never see a
	// partial file and an aborted run leaves the old one untouched.
	ModeOverwrite = "overwrite"
	// ModeAppend adds to the file; an aborted run truncates it back.
	ModeAppend = "append"
)

// WriteModes lists the modes for a sink's Spec.
var WriteModes = []string{ModeOverwrite, ModeAppend}

// Output is a file being written by one sink session.
type Output struct {
	path     string
	mode     string
	sync     bool
	f        *os.File
	w        *bufio.Writer
	tmp      string
	origSize int64
}

// Create starts writing path in the given mode, creating missing parent
// directories. With sync, Commit also flushes the file to stable storage.
func Create(path, mode string, sync bool) (*Output, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	o := &Output{path: path, mode: mode, sync: sync}
	switch mode {
	case ModeAppend:
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("output file: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("output file: %w", err)
		}
		o.f, o.origSize = f, fi.Size()
	case ModeOverwrite, "":
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".faucet-*")
		if err != nil {
			return nil, fmt.Errorf("output file: %w", err)
		}
		o.f, o.tmp, o.mode = f, f.Name(), ModeOverwrite
	default:
		return nil, fmt.Errorf("unknown write mode %q", mode)
	}
	o.w = buffers.Get().(*bufio.Writer)
	o.w.Reset(o.f)
	return o, nil
}

// buffers recycles the sessions' write buffers: a plugin process runs one
// session after another, and allocating (and zeroing) a fresh megabyte for
// each cost a short run more than its records did.
var buffers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 1<<20) }}

// release hands the write buffer back once the session is done with it.
func (o *Output) release() {
	if o.w == nil {
		return
	}
	o.w.Reset(nil)
	buffers.Put(o.w)
	o.w = nil
}

// Empty reports whether the file held nothing before this session, which
// decides whether a CSV header is due.
func (o *Output) Empty() bool { return o.origSize == 0 }

// Write buffers p for the file.
func (o *Output) Write(p []byte) (int, error) { return o.w.Write(p) }

// Commit makes everything written part of the file.
func (o *Output) Commit() error {
	err := o.w.Flush()
	o.release()
	if err == nil && o.sync {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", o.path, err), o.discard())
	}
	if o.mode == ModeOverwrite {
		if err := os.Rename(o.tmp, o.path); err != nil {
			return errors.Join(fmt.Errorf("replace %s: %w", o.path, err), os.Remove(o.tmp))
		}
	}
	return nil
}

// Abort leaves the file as it was before the session.
func (o *Output) Abort() error {
	o.release()
	o.f.Close()
	return o.discard()
}

func (o *Output) discard() error {
	if o.mode == ModeOverwrite {
		if err := os.Remove(o.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.Truncate(o.path, o.origSize); err != nil {
		return fmt.Errorf("truncate %s back: %w", o.path, err)
	}
	return nil
}
