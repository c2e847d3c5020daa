package sdk

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// Files is the file access faucet grants a connector for one call. Under
// faucet serve it is confined: every path resolves beneath one of the
// server's file roots (a relative path beneath the first), by the kernel at
// open time through os.Root, so neither "..", nor a symlink, nor a directory
// renamed mid-call leads out of them; and the server's own files (its
// history database, tokens, auth config) are refused by identity, however a
// path reaches them. Under faucet run it is unconfined and opens paths as
// given.
//
// A connector gets it with FilesFrom(ctx) in Read, Open, Check and Shards,
// and opens every file it reads or writes through it. faucet cannot make a
// third-party plugin do so: a plugin is a program of its own, running as
// faucet's user.
type Files struct {
	roots  []string
	denied []DeniedFile

	guardOnce sync.Once
	guards    guardDirs
}

// DeniedFile is a file no connector may open, or, for a directory, create
// files in: one of the server's own. Path is its canonical absolute path,
// which covers a file not created yet (a database's -wal file); Device and
// Inode identify an existing one whatever name reaches it (a hard link).
type DeniedFile struct {
	Path          string
	Device, Inode uint64
	// Dir: no file may be opened or created directly inside it.
	Dir bool
}

// NewFiles returns file access confined to roots (absolute, canonical
// directories) that refuses denied; with no roots it is unconfined.
func NewFiles(roots []string, denied []DeniedFile) *Files {
	return &Files{roots: append([]string(nil), roots...), denied: append([]DeniedFile(nil), denied...)}
}

// Unconfined is the file access of faucet run: every path as given.
var unconfined = &Files{}

type filesKey struct{}

// WithFiles returns ctx carrying f, as the SDK hands it to a connector.
func WithFiles(ctx context.Context, f *Files) context.Context {
	return context.WithValue(ctx, filesKey{}, f)
}

// FilesFrom returns the file access of the call ctx belongs to; unconfined
// when faucet granted none (faucet run, or a connector called directly).
func FilesFrom(ctx context.Context) *Files {
	if f, ok := ctx.Value(filesKey{}).(*Files); ok && f != nil {
		return f
	}
	return unconfined
}

// Confined reports whether paths are bounded by roots.
func (f *Files) Confined() bool { return len(f.roots) > 0 }

// Roots returns the file roots; none when unconfined.
func (f *Files) Roots() []string { return append([]string(nil), f.roots...) }

// Denied returns the files no connector may open.
func (f *Files) Denied() []DeniedFile { return append([]DeniedFile(nil), f.denied...) }

// ErrOutsideRoots is the error of a path that no file root holds, and of
// one that leads out of its root (through "..", or a symlink).
var ErrOutsideRoots = errors.New("outside the file roots")

// ErrServerFile is the error of a path that reaches one of the server's own
// files.
var ErrServerFile = errors.New("one of the server's own files, which no run may open")

// PathError is a refused or failed file operation: the path as the config
// gave it, the roots it was confined to, and why.
type PathError struct {
	Op    string
	Path  string
	Roots []string
	Err   error
}

func (e *PathError) Error() string {
	switch {
	case e.Op == "" && errors.Is(e.Err, ErrOutsideRoots):
		return fmt.Sprintf("path %s is %v (%s)", e.Path, ErrOutsideRoots, strings.Join(e.Roots, ", "))
	case e.Op == "" && errors.Is(e.Err, ErrServerFile):
		return fmt.Sprintf("path %s is refused: it is %v", e.Path, ErrServerFile)
	case e.Op == "":
		return fmt.Sprintf("path %s (under file roots %s): %v", e.Path, strings.Join(e.Roots, ", "), e.Err)
	case errors.Is(e.Err, ErrOutsideRoots):
		return fmt.Sprintf("%s %s: the path is %v (%s)", e.Op, e.Path, ErrOutsideRoots, strings.Join(e.Roots, ", "))
	case errors.Is(e.Err, ErrServerFile):
		return fmt.Sprintf("%s %s: refused: it is %v", e.Op, e.Path, ErrServerFile)
	case len(e.Roots) > 0:
		return fmt.Sprintf("%s %s (under file roots %s): %v", e.Op, e.Path, strings.Join(e.Roots, ", "), e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

func (e *PathError) Unwrap() error { return e.Err }

func (f *Files) fail(op, name string, err error) error {
	var pe *PathError
	if errors.As(err, &pe) {
		return err
	}
	// os.Root's refusal of a path that climbs out of it.
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		err = ErrOutsideRoots
	}
	return &PathError{Op: op, Path: name, Roots: f.roots, Err: unwrapPathError(err)}
}

// unwrapPathError drops the *fs.PathError os wraps errors in: PathError
// names the path as the config gave it instead.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Abs returns the absolute path a config's path names: a relative path is
// taken within the first root (or the working directory, unconfined).
// Lexical only; it opens nothing and checks nothing.
func (f *Files) Abs(name string) (string, error) {
	if !f.Confined() || filepath.IsAbs(name) {
		return filepath.Abs(name)
	}
	return filepath.Join(f.roots[0], name), nil
}

// place finds the root holding name and the path beneath it: a relative
// name is beneath the first root; an absolute one must lie in one
// lexically. Whether it stays inside once symlinks are followed is for the
// kernel to say when the file is opened through the root.
func (f *Files) place(name string) (root, rel string, err error) {
	if name == "" {
		return "", "", errors.New("empty path")
	}
	if !filepath.IsAbs(name) {
		rel = filepath.Clean(name)
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", "", ErrOutsideRoots
		}
		return f.roots[0], rel, nil
	}
	clean := filepath.Clean(name)
	for _, r := range f.roots {
		switch {
		case clean == r:
			return r, ".", nil
		case r == string(filepath.Separator):
			return r, clean[1:], nil
		case strings.HasPrefix(clean, r+string(filepath.Separator)):
			return r, clean[len(r)+1:], nil
		}
	}
	return "", "", ErrOutsideRoots
}

// within opens the root holding name, for the caller to close.
func (f *Files) within(name string) (*os.Root, string, error) {
	root, rel, err := f.place(name)
	if err != nil {
		return nil, "", err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, "", fmt.Errorf("open file root %s: %w", root, err)
	}
	return r, rel, nil
}

// Open opens name for reading.
func (f *Files) Open(name string) (*os.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile opens name as os.OpenFile does. Missing parent directories are
// not created (see MkdirAll). Beneath a root, a path naming one of the
// server's own files is refused before it is opened; a file that turns out
// to be one once open (a hard link, a file swapped in meanwhile) is closed
// again and refused.
func (f *Files) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	if !f.Confined() {
		file, err := os.OpenFile(name, flag, perm)
		return f.opened(name, file, err)
	}
	r, rel, err := f.within(name)
	if err != nil {
		return nil, f.fail("open", name, err)
	}
	defer r.Close()
	if err := f.refuseTarget(r, rel); err != nil {
		return nil, f.fail("open", name, err)
	}
	file, err := r.OpenFile(rel, flag, perm)
	return f.opened(name, file, err)
}

// opened admits the file an open of name returned, closing it when it is
// one of the server's own.
func (f *Files) opened(name string, file *os.File, err error) (*os.File, error) {
	if err != nil {
		return nil, f.fail("open", name, err)
	}
	if err := f.admit(file); err != nil {
		file.Close()
		return nil, f.fail("open", name, err)
	}
	return file, nil
}

// Stat returns the file info of name, following symlinks within its root.
func (f *Files) Stat(name string) (fs.FileInfo, error) {
	var (
		fi  fs.FileInfo
		err error
	)
	if !f.Confined() {
		fi, err = os.Stat(name)
	} else {
		r, rel, werr := f.within(name)
		if werr != nil {
			return nil, f.fail("stat", name, werr)
		}
		defer r.Close()
		fi, err = r.Stat(rel)
	}
	if err != nil {
		return nil, f.fail("stat", name, err)
	}
	if f.deniedID(fi) {
		return nil, f.fail("stat", name, ErrServerFile)
	}
	return fi, nil
}

// MkdirAll creates dir and its missing parents beneath its root.
func (f *Files) MkdirAll(dir string, perm os.FileMode) error {
	if !f.Confined() {
		if err := os.MkdirAll(dir, perm); err != nil {
			return f.fail("create directory", dir, err)
		}
		return nil
	}
	r, rel, err := f.within(dir)
	if err != nil {
		return f.fail("create directory", dir, err)
	}
	defer r.Close()
	if rel == "." {
		return nil
	}
	if err := r.MkdirAll(rel, perm); err != nil {
		return f.fail("create directory", dir, err)
	}
	return nil
}

// Rename replaces newname with oldname, both beneath the same root. A
// newname that is one of the server's own files is refused.
func (f *Files) Rename(oldname, newname string) error {
	if !f.Confined() {
		if err := f.refuseReplacing(nil, newname); err != nil {
			return f.fail("replace", newname, err)
		}
		if err := os.Rename(oldname, newname); err != nil {
			return f.fail("replace", newname, err)
		}
		return nil
	}
	oldRoot, oldRel, err := f.place(oldname)
	if err != nil {
		return f.fail("replace", newname, err)
	}
	r, newRel, err := f.within(newname)
	if err != nil {
		return f.fail("replace", newname, err)
	}
	defer r.Close()
	if r.Name() != oldRoot {
		return f.fail("replace", newname, fmt.Errorf("%s is under another file root", oldname))
	}
	if err := f.refuseTarget(r, newRel); err != nil {
		return f.fail("replace", newname, err)
	}
	if err := f.refuseReplacing(r, newRel); err != nil {
		return f.fail("replace", newname, err)
	}
	if err := r.Rename(oldRel, newRel); err != nil {
		return f.fail("replace", newname, err)
	}
	return nil
}

// refuseReplacing refuses to replace an existing file that is one of the
// server's own (r nil: name as given).
func (f *Files) refuseReplacing(r *os.Root, name string) error {
	if len(f.denied) == 0 {
		return nil
	}
	var (
		fi  fs.FileInfo
		err error
	)
	if r == nil {
		fi, err = os.Lstat(name)
	} else {
		fi, err = r.Lstat(name)
	}
	if err == nil && f.deniedID(fi) {
		return ErrServerFile
	}
	return nil
}

// Remove deletes the regular file name; a directory or a symlink is not
// removed.
func (f *Files) Remove(name string) error {
	var (
		fi  fs.FileInfo
		err error
		r   *os.Root
		rel = name
	)
	if f.Confined() {
		if r, rel, err = f.within(name); err != nil {
			return f.fail("remove", name, err)
		}
		defer r.Close()
		fi, err = r.Lstat(rel)
	} else {
		fi, err = os.Lstat(name)
	}
	if err = f.removable(fi, err); err == nil {
		if r == nil {
			err = os.Remove(name)
		} else {
			err = r.Remove(rel)
		}
	}
	if err != nil {
		return f.fail("remove", name, err)
	}
	return nil
}

// removable says whether a file Lstat described (or failed to) may be
// removed: a regular file, none of the server's own.
func (f *Files) removable(fi fs.FileInfo, err error) error {
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	case f.deniedID(fi):
		return ErrServerFile
	}
	return nil
}

// Glob returns the names matching pattern (filepath.Match syntax), sorted.
// Confined, the names are absolute, beneath the pattern's root, and a
// pattern may not climb with "..".
func (f *Files) Glob(pattern string) ([]string, error) {
	if !f.Confined() {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return nil, f.fail("match", pattern, err)
		}
		return m, nil
	}
	root, rel, err := f.place(pattern)
	if err != nil {
		return nil, f.fail("match", pattern, err)
	}
	slashed := filepath.ToSlash(rel)
	if !fs.ValidPath(slashed) {
		return nil, f.fail("match", pattern, errors.New(`a pattern under file roots cannot use ".."`))
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, f.fail("match", pattern, err)
	}
	defer r.Close()
	matches, err := fs.Glob(r.FS(), slashed)
	if err != nil {
		return nil, f.fail("match", pattern, err)
	}
	out := make([]string, len(matches))
	for i, m := range matches {
		out[i] = filepath.Join(root, filepath.FromSlash(m))
	}
	return out, nil
}

// Dir opens the directory that holds name, resolved beneath its root, and
// returns it with name's last element, for a library that opens the file
// itself by a path through the directory (SQLite through /proc/self/fd):
// the directory is pinned, so renaming the path meanwhile changes nothing.
// The caller closes it.
func (f *Files) Dir(name string) (*os.File, string, error) {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return nil, "", f.fail("open", name, errors.New("not a file path"))
	}
	if !f.Confined() {
		d, err := os.Open(dir)
		if err != nil {
			return nil, "", f.fail("open", name, err)
		}
		return d, base, nil
	}
	r, rel, err := f.within(name)
	if err != nil {
		return nil, "", f.fail("open", name, err)
	}
	defer r.Close()
	if err := f.refuseTarget(r, rel); err != nil {
		return nil, "", f.fail("open", name, err)
	}
	d, err := r.Open(filepath.Dir(rel))
	if err != nil {
		return nil, "", f.fail("open", name, err)
	}
	return d, path.Base(filepath.ToSlash(rel)), nil
}

// Check reports, without opening anything, whether name is a path this
// file access lets a connector read or write: it lies in a root, resolves
// beneath it (an existing file, or else the nearest existing directory on
// its way, so a symlink out is noticed before anything is created), and is
// none of the server's own files. A glob is checked as written: it may not
// leave its root. faucet serve checks the paths of a submitted config with
// it; opening the file still checks everything again.
func (f *Files) Check(name string) error {
	if !f.Confined() {
		return nil
	}
	if strings.ContainsAny(name, `*?[\`) {
		_, rel, err := f.place(name)
		if err == nil && !fs.ValidPath(filepath.ToSlash(rel)) {
			err = errors.New(`a pattern under file roots cannot use ".."`)
		}
		if err != nil {
			return f.fail("", name, err)
		}
		return nil
	}
	r, rel, err := f.within(name)
	if err != nil {
		return f.fail("", name, err)
	}
	defer r.Close()
	for p := rel; ; p = filepath.Dir(p) {
		fi, err := r.Stat(p)
		if err == nil {
			if p == rel && f.deniedID(fi) {
				return f.fail("", name, ErrServerFile)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			if strings.Contains(err.Error(), "path escapes from parent") {
				return f.fail("", name, ErrOutsideRoots)
			}
			// Not for a check to judge (a permission, a file where a
			// directory should be): the run reports it when it opens it.
			break
		}
		if p == "." {
			break
		}
	}
	if err := f.refuseTarget(r, rel); err != nil {
		return f.fail("", name, err)
	}
	return nil
}

// Admit refuses a file some library opened by itself (SQLite, through a
// path Dir returned) when it is one of the server's own; realPath is where
// the file actually is, "" when unknown.
func (f *Files) Admit(fi fs.FileInfo, realPath string) error {
	if f.deniedID(fi) || f.deniedPath(realPath) {
		return ErrServerFile
	}
	return nil
}

// refuseTarget refuses a path beneath r whose real location, the real path
// of the directory it is in (resolved by the kernel) and its last element,
// is a denied path or lies directly in a denied directory. It catches what
// does not exist yet; identity checks after opening catch the rest.
func (f *Files) refuseTarget(r *os.Root, rel string) error {
	if len(f.denied) == 0 {
		return nil
	}
	d, err := r.Open(filepath.Dir(rel))
	if err != nil {
		// Opening the file itself reports the problem.
		return nil
	}
	defer d.Close()
	dir := realPath(d)
	if dir == "" {
		return nil
	}
	if f.deniedPath(filepath.Join(dir, filepath.Base(rel))) {
		return ErrServerFile
	}
	return nil
}

// admit refuses an open file that is one of the server's own.
func (f *Files) admit(file *os.File) error {
	if len(f.denied) == 0 {
		return nil
	}
	fi, err := file.Stat()
	if err != nil {
		return err
	}
	return f.Admit(fi, realPath(file))
}

func (f *Files) deniedID(fi fs.FileInfo) bool {
	if fi == nil || len(f.denied) == 0 {
		return false
	}
	dev, ino, ok := fileID(fi)
	if !ok {
		return false
	}
	for _, d := range f.denied {
		if !d.Dir && d.Inode != 0 && d.Device == dev && d.Inode == ino {
			return true
		}
	}
	return false
}

func (f *Files) deniedPath(p string) bool {
	if p == "" {
		return false
	}
	for _, d := range f.denied {
		if (!d.Dir && p == d.Path) || (d.Dir && filepath.Dir(p) == d.Path) {
			return true
		}
	}
	return false
}

// FileID returns the device and inode of a file, ok false where the
// platform has none.
func FileID(fi fs.FileInfo) (dev, ino uint64, ok bool) { return fileID(fi) }

// filesFrom decodes the file access faucet sent with a call; nil when it
// sent none.
func filesFrom(fa *connectorv1.FileAccess) *Files {
	if fa == nil {
		return nil
	}
	denied := make([]DeniedFile, 0, len(fa.GetDenied()))
	for _, d := range fa.GetDenied() {
		denied = append(denied, DeniedFile{Path: d.GetPath(), Device: d.GetDevice(), Inode: d.GetInode(), Dir: d.GetDirectory()})
	}
	return NewFiles(fa.GetRoots(), denied)
}

// sameAccess reports whether fa grants exactly what f does.
func (f *Files) sameAccess(fa *connectorv1.FileAccess) bool {
	if !slices.Equal(f.roots, fa.GetRoots()) || len(f.denied) != len(fa.GetDenied()) {
		return false
	}
	for i, d := range fa.GetDenied() {
		if f.denied[i] != (DeniedFile{Path: d.GetPath(), Device: d.GetDevice(), Inode: d.GetInode(), Dir: d.GetDirectory()}) {
			return false
		}
	}
	return true
}

// accessCache keeps the file access a plugin process was sent last: faucet
// sends the same roots and server files with call after call, and what a
// Files learns about them (guardDirs) is then learnt once per process, not
// once per call.
type accessCache struct {
	mu   sync.Mutex
	last *Files
}

// callContext is ctx carrying the file access of a call, when it has one.
func (c *accessCache) callContext(ctx context.Context, fa *connectorv1.FileAccess) context.Context {
	if fa == nil {
		return ctx
	}
	c.mu.Lock()
	f := c.last
	if f == nil || !f.sameAccess(fa) {
		f = filesFrom(fa)
		c.last = f
	}
	c.mu.Unlock()
	return WithFiles(ctx, f)
}
