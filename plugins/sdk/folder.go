package sdk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Folder is the directory holding one path, opened once through the file
// access and kept open until Close. A sink that replaces a file atomically
// (a temporary file written beside it, then renamed over it) takes every
// step through one Folder: each resolves one name in a directory already
// resolved beneath its root, so a directory renamed or swapped for a
// symlink meanwhile changes nothing, and no step walks the path again,
// which is most of what a short session's files cost.
//
// Its methods take one path element (a name in the directory, no
// separator). Confined, they refuse what Files refuses: a symlink out of
// the root, the server's own files by path and by identity.
type Folder struct {
	f *Files
	// dir is the directory's path: absolute when confined, as given
	// otherwise.
	dir  string
	base string
	// root is the directory opened beneath its file root; nil unconfined.
	root *os.Root
	// real is where the directory is, as the kernel resolved it, when it
	// may hold one of the server's files (mayHoldDenied); "" otherwise.
	real string
}

// Folder opens the directory that holds name and returns it with name's
// last element as Base. With mkdir, a missing directory and its parents
// are created first.
func (f *Files) Folder(name string, mkdir bool) (*Folder, error) {
	dir, base := filepath.Split(name)
	if base == "" || base == "." || base == ".." {
		return nil, f.fail("open", name, errors.New("not a file path"))
	}
	if !f.Confined() {
		if dir == "" {
			dir = "."
		}
		if mkdir {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, f.fail("create directory", dir, err)
			}
		}
		return &Folder{f: f, dir: filepath.Clean(dir), base: base}, nil
	}
	r, rel, err := f.within(name)
	if err != nil {
		return nil, f.fail("open", name, err)
	}
	defer r.Close()
	if rel == "." {
		return nil, f.fail("open", name, errors.New("not a file path"))
	}
	relDir := filepath.Dir(rel)
	sub, err := r.OpenRoot(relDir)
	if errors.Is(err, fs.ErrNotExist) && mkdir {
		if err = r.MkdirAll(relDir, 0o755); err != nil {
			return nil, f.fail("create directory", filepath.Join(r.Name(), relDir), err)
		}
		sub, err = r.OpenRoot(relDir)
	}
	if err != nil {
		return nil, f.fail("open", name, err)
	}
	d := &Folder{f: f, dir: filepath.Join(r.Name(), relDir), base: filepath.Base(rel), root: sub}
	if f.mayHoldDenied(sub) {
		if d.real, err = d.realDir(); err != nil {
			sub.Close()
			return nil, f.fail("open", name, err)
		}
		if f.deniedPath(filepath.Join(d.real, d.base)) {
			sub.Close()
			return nil, f.fail("open", name, ErrServerFile)
		}
	}
	return d, nil
}

// guardDirs are the directories that hold a denied path or are denied
// themselves, by identity, taken once per Files: a directory that is none
// of them holds no path the server's files are refused by, and its real
// path (a readlink, the dearest step of a short session's files) need not
// be asked. Complete is false when one of them could not be identified (it
// does not exist, yet): every directory is then asked. faucet sends new
// file access whenever the identities of its own files change, and a Files
// takes these once: a directory of the server's own replaced by another
// while a plugin process lives would be told apart from them only by its
// files' identities, checked at every open of an existing file.
type guardDirs struct {
	ids      []fileKey
	complete bool
}

type fileKey struct{ dev, ino uint64 }

func (f *Files) guardDirs() guardDirs {
	f.guardOnce.Do(func() {
		g := guardDirs{complete: true}
		for _, d := range f.denied {
			dir := d.Path
			if !d.Dir {
				dir = filepath.Dir(d.Path)
			}
			fi, err := os.Stat(dir)
			var key fileKey
			ok := err == nil
			if ok {
				key.dev, key.ino, ok = fileID(fi)
			}
			if !ok {
				g.complete = false
				break
			}
			g.ids = append(g.ids, key)
		}
		f.guards = g
	})
	return f.guards
}

// mayHoldDenied reports whether dir, opened beneath a root, may hold one
// of the denied paths: whether it is one of guardDirs, or cannot be told
// apart from them.
func (f *Files) mayHoldDenied(dir *os.Root) bool {
	if len(f.denied) == 0 {
		return false
	}
	g := f.guardDirs()
	if !g.complete {
		return true
	}
	fi, err := dir.Stat(".")
	if err != nil {
		return true
	}
	var key fileKey
	var ok bool
	if key.dev, key.ino, ok = fileID(fi); !ok {
		return true
	}
	return slices.Contains(g.ids, key)
}

// realDir is where the directory is, as the kernel resolved it.
func (d *Folder) realDir() (string, error) {
	h, err := d.root.Open(".")
	if err != nil {
		return "", err
	}
	defer h.Close()
	return realPath(h), nil
}

// Base is the last element of the name the Folder was opened for.
func (d *Folder) Base() string { return d.base }

// Path is the path of elem in the directory, as a PathError names it:
// absolute when confined.
func (d *Folder) Path(elem string) string { return filepath.Join(d.dir, elem) }

// Close releases the directory.
func (d *Folder) Close() error {
	if d.root == nil {
		return nil
	}
	return d.root.Close()
}

// element refuses a name that is not one path element, and, confined, a
// name that is one of the server's own files by its path.
func (d *Folder) element(op, elem string) error {
	if elem == "" || elem == "." || elem == ".." || strings.ContainsRune(elem, filepath.Separator) {
		return d.f.fail(op, d.Path(elem), fmt.Errorf("%q is not a name in the directory", elem))
	}
	if d.real != "" && d.f.deniedPath(filepath.Join(d.real, elem)) {
		return d.f.fail(op, d.Path(elem), ErrServerFile)
	}
	return nil
}

// Stat returns the file info of elem, following a symlink that stays in
// the root.
func (d *Folder) Stat(elem string) (fs.FileInfo, error) {
	if err := d.element("stat", elem); err != nil {
		return nil, err
	}
	var (
		fi  fs.FileInfo
		err error
	)
	if d.root == nil {
		fi, err = os.Stat(d.Path(elem))
	} else {
		fi, err = d.root.Stat(elem)
	}
	if err != nil {
		return nil, d.f.fail("stat", d.Path(elem), err)
	}
	if d.f.deniedID(fi) {
		return nil, d.f.fail("stat", d.Path(elem), ErrServerFile)
	}
	return fi, nil
}

// OpenFile opens elem as os.OpenFile does. A file it creates exclusively
// (os.O_CREATE|os.O_EXCL) is new, so it can be none of the server's files
// by identity, and is not checked again once open; any other is.
func (d *Folder) OpenFile(elem string, flag int, perm os.FileMode) (*os.File, error) {
	if err := d.element("open", elem); err != nil {
		return nil, err
	}
	var (
		file *os.File
		err  error
	)
	if d.root == nil {
		file, err = os.OpenFile(d.Path(elem), flag, perm)
	} else {
		file, err = d.root.OpenFile(elem, flag, perm)
	}
	if err == nil && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
		return file, nil
	}
	return d.f.opened(d.Path(elem), file, err)
}

// Rename replaces newelem with oldelem. A newelem that is one of the
// server's own files is refused.
func (d *Folder) Rename(oldelem, newelem string) error {
	if err := d.element("replace", oldelem); err != nil {
		return err
	}
	if err := d.element("replace", newelem); err != nil {
		return err
	}
	var err error
	if d.root == nil {
		if err = d.f.refuseReplacing(nil, d.Path(newelem)); err == nil {
			err = os.Rename(d.Path(oldelem), d.Path(newelem))
		}
	} else if err = d.f.refuseReplacing(d.root, newelem); err == nil {
		err = d.root.Rename(oldelem, newelem)
	}
	if err != nil {
		return d.f.fail("replace", d.Path(newelem), err)
	}
	return nil
}

// Remove deletes the regular file elem; a directory or a symlink is not
// removed.
func (d *Folder) Remove(elem string) error {
	if err := d.element("remove", elem); err != nil {
		return err
	}
	var (
		fi  fs.FileInfo
		err error
	)
	if d.root == nil {
		fi, err = os.Lstat(d.Path(elem))
	} else {
		fi, err = d.root.Lstat(elem)
	}
	if err = d.f.removable(fi, err); err == nil {
		if d.root == nil {
			err = os.Remove(d.Path(elem))
		} else {
			err = d.root.Remove(elem)
		}
	}
	if err != nil {
		return d.f.fail("remove", d.Path(elem), err)
	}
	return nil
}
