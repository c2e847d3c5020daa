package files

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"

	"github.com/faucet-dev/faucet/plugins/sdk"
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
	// dir holds the file, open for the whole session: the temporary file
	// of an overwrite is created, renamed and removed through it.
	dir  *sdk.Folder
	path string
	mode string
	sync bool
	f    *os.File
	w    *bufio.Writer
	// tmp is the temporary file's name in dir (overwrite).
	tmp string
	// origSize is the size of the file before the session (append).
	origSize int64
	// existed: the file was there before the session.
	existed bool
	// written counts the bytes this session wrote.
	written int64
}

// Create starts writing path as opts say, creating missing parent
// directories, all through fs.
func Create(fs *sdk.Files, path string, opts Options) (*Output, error) {
	perm, explicit, err := opts.perm()
	if err != nil {
		return nil, err
	}
	abs, err := fs.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("output file: %w", err)
	}
	if !fs.Confined() {
		abs = path
	}
	dir, err := fs.Folder(abs, true)
	if err != nil {
		return nil, fmt.Errorf("output file: %w", err)
	}
	o := &Output{dir: dir, path: abs, mode: opts.WriteMode, sync: opts.Sync}
	if err := o.open(perm, explicit); err != nil {
		dir.Close()
		return nil, fmt.Errorf("output file: %w", err)
	}
	o.w = buffers.Get().(*bufio.Writer)
	o.w.Reset(o.f)
	return o, nil
}

// open opens the file an append extends, or creates the temporary file an
// overwrite writes.
func (o *Output) open(perm os.FileMode, explicit bool) error {
	base := o.dir.Base()
	switch o.mode {
	case ModeAppend:
		_, statErr := o.dir.Stat(base)
		created := errors.Is(statErr, os.ErrNotExist)
		f, err := o.dir.OpenFile(base, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err == nil && created && explicit {
			// A file appended to keeps its own mode; one created here gets
			// the mode asked for.
			err = f.Chmod(perm)
		}
		if err != nil {
			f.Close()
			return err
		}
		o.f, o.origSize, o.existed = f, fi.Size(), !created
	case ModeOverwrite, "":
		fi, statErr := o.dir.Stat(base)
		o.existed = statErr == nil
		if !explicit && statErr == nil {
			perm, explicit = fi.Mode().Perm(), true
		}
		f, tmp, err := createTemp(o.dir, base)
		if err == nil && explicit {
			err = f.Chmod(perm)
		}
		if err != nil {
			if f != nil {
				f.Close()
				_ = o.dir.Remove(tmp)
			}
			return err
		}
		o.f, o.tmp, o.mode = f, tmp, ModeOverwrite
	default:
		return fmt.Errorf("unknown write mode %q", o.mode)
	}
	return nil
}

// createTemp creates the temporary file an overwrite writes, in dir beside
// base, and returns it with its name. Unlike os.CreateTemp, which makes
// every file 0600, it asks for 0666 and lets the umask decide, as the final
// file's default is.
func createTemp(dir *sdk.Folder, base string) (*os.File, string, error) {
	for range 100 {
		name := "." + base + ".faucet-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, os.ErrExist) {
			return f, name, err
		}
	}
	return nil, "", fmt.Errorf("no free temporary name beside %s", dir.Path(base))
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
func (o *Output) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.written += int64(n)
	return n, err
}

// Commit makes everything written part of the file and reports the file to
// faucet (sdk.ReportOutput) as one the session created or replaced.
func (o *Output) Commit(ctx context.Context) error {
	w, err := o.commit()
	if err != nil {
		return err
	}
	sdk.ReportOutput(ctx, sdk.OutputFile{Path: w.Path, Size: w.Size, Existed: w.Existed})
	return nil
}

func (o *Output) commit() (Written, error) {
	err := o.w.Flush()
	o.release()
	if err == nil && o.sync {
		err = o.f.Sync()
	}
	// An overwrite's file is what this session wrote; an append's is asked,
	// since another writer may have appended too.
	size := o.written
	if err == nil && o.mode == ModeAppend {
		var fi os.FileInfo
		if fi, err = o.f.Stat(); err == nil {
			size = fi.Size()
		}
	}
	if err != nil {
		err = errors.Join(fmt.Errorf("write %s: %w", o.path, err), o.discard())
		o.f.Close()
		return Written{}, err
	}
	if err := o.f.Close(); err != nil {
		return Written{}, errors.Join(fmt.Errorf("write %s: %w", o.path, err), o.discard())
	}
	if o.mode == ModeOverwrite {
		if err := o.dir.Rename(o.tmp, o.dir.Base()); err != nil {
			return Written{}, errors.Join(fmt.Errorf("replace %s: %w", o.path, err), o.discard())
		}
	}
	// Closing the directory, which was only read, loses nothing.
	o.dir.Close()
	return Written{Path: o.path, Size: size, Existed: o.existed}, nil
}

// Written is a file a committed session created or replaced.
type Written struct {
	// Path is the file's absolute path (as given, unconfined).
	Path string
	Size int64
	// Existed: the file was there before the session.
	Existed bool
}

// Abort leaves the file as it was before the session.
func (o *Output) Abort() error {
	o.release()
	err := o.discard()
	o.f.Close()
	return err
}

// discard takes back what the session wrote: the temporary file of an
// overwrite, the appended bytes of an append (through the file still open,
// so no path is resolved again).
func (o *Output) discard() error {
	defer o.dir.Close()
	if o.mode == ModeOverwrite {
		if err := o.dir.Remove(o.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := o.f.Truncate(o.origSize); err != nil {
		return fmt.Errorf("truncate %s back: %w", o.path, err)
	}
	return nil
}
