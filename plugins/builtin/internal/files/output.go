package files

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// The write modes of the file sinks.
const (
	// ModeOverwrite replaces the file when the session commits; until then
	// the records go to a temporary file beside it, so readers never see a
	// partial file and an aborted run (a failed or a cancelled one) leaves
	// the old one untouched.
	ModeOverwrite = "overwrite"
	// ModeAppend adds to the file; an aborted run truncates it back.
	ModeAppend = "append"
)

// WriteModes lists the modes for a sink's Spec.
var WriteModes = []string{ModeOverwrite, ModeAppend}

// SinkProperties are the JSON Schema properties every file sink's config
// has, the ones Options decodes, for splicing into a sink schema's
// "properties".
const SinkProperties = `"write_mode": {"enum": ["overwrite", "append"], "default": "overwrite", "description": "overwrite replaces the file once the run completes (a failed or cancelled run leaves the previous file as it was); append adds to it."},
    "mode": {"type": "string", "pattern": "^0?[0-7]{3}$", "title": "a file mode (three octal digits)", "examples": ["0600", "0644"], "description": "The permission bits of a file the sink creates or replaces, in octal. Default: a new file gets 0666 less the umask, as other programs' files do, and an overwritten file keeps its own."},
    "sync": {"type": "boolean", "default": false, "description": "Flush the file to stable storage before the commit is reported."}`

// Options are the file settings of a sink config.
type Options struct {
	WriteMode string `json:"write_mode"`
	// Mode is the octal permission string ("0600"); "" takes the default
	// SinkProperties describes.
	Mode string `json:"mode"`
	// Sync makes Commit flush the file to stable storage.
	Sync bool `json:"sync"`
}

// perm parses Mode.
func (o Options) perm() (os.FileMode, bool, error) {
	if o.Mode == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(o.Mode, 8, 32)
	if err != nil || n > 0o777 {
		return 0, false, fmt.Errorf("mode %q: want three octal digits, such as 0600", o.Mode)
	}
	return os.FileMode(n), true, nil
}

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

// Create starts writing path as opts say, creating missing parent
// directories.
func Create(path string, opts Options) (*Output, error) {
	perm, explicit, err := opts.perm()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	o := &Output{path: path, mode: opts.WriteMode, sync: opts.Sync}
	switch opts.WriteMode {
	case ModeAppend:
		_, statErr := os.Stat(path)
		created := errors.Is(statErr, os.ErrNotExist)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
		if err != nil {
			return nil, fmt.Errorf("output file: %w", err)
		}
		fi, err := f.Stat()
		if err == nil && created && explicit {
			// A file appended to keeps its own mode; one created here gets
			// the mode asked for.
			err = f.Chmod(perm)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("output file: %w", err)
		}
		o.f, o.origSize = f, fi.Size()
	case ModeOverwrite, "":
		if !explicit {
			if fi, err := os.Stat(path); err == nil {
				perm, explicit = fi.Mode().Perm(), true
			}
		}
		f, err := createTemp(path)
		if err == nil && explicit {
			err = f.Chmod(perm)
		}
		if err != nil {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
			return nil, fmt.Errorf("output file: %w", err)
		}
		o.f, o.tmp, o.mode = f, f.Name(), ModeOverwrite
	default:
		return nil, fmt.Errorf("unknown write mode %q", opts.WriteMode)
	}
	o.w = buffers.Get().(*bufio.Writer)
	o.w.Reset(o.f)
	return o, nil
}

// createTemp creates the temporary file an overwrite writes, beside path.
// Unlike os.CreateTemp, which makes every file 0600, it asks for 0666 and
// lets the umask decide, as the final file's default is.
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+".faucet-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, os.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
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
