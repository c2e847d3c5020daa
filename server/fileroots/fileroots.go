// Package fileroots bounds what a run of faucet serve may touch on disk: the
// file roots every path of a built-in file connector (and the dead-letter
// file) must resolve beneath, and the server's own files (its history
// database, token file, auth config, env file), which no run may open even
// inside a root. It resolves them once at start, checks the paths of a
// submitted config (a 400 before anything runs), and hands the connector
// host the sdk.Files every plugin call carries.
package fileroots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// DefaultDir is the file root of a server started without --file-root: a
// directory of this name in the data directory, created on start.
const DefaultDir = "files"

// Config says where runs may read and write and what they must not touch.
type Config struct {
	// Roots are the --file-root directories, in order; a relative path in
	// a config resolves beneath the first. Empty: DataDir/files.
	Roots []string
	// DataDir is where the default root is created.
	DataDir string
	// ServerFiles are the server's own files (history database, token
	// file, auth config, env file), which may not exist yet.
	ServerFiles []string
	// PluginDirs hold the plugin executables: no run may create a file in
	// one, which the next start would run.
	PluginDirs []string
}

// Access is the resolved file policy of one server. It is safe for
// concurrent use.
type Access struct {
	roots  []string
	denied []string
	dirs   []string
	files  atomic.Pointer[sdk.Files]
}

// New resolves the roots (creating the default one) and takes the identity
// of every server file that exists. A root that does not exist, or is not
// a directory, is an error naming it.
func New(cfg Config) (*Access, error) {
	a := &Access{}
	roots := cfg.Roots
	if len(roots) == 0 {
		def := filepath.Join(cfg.DataDir, DefaultDir)
		if err := os.MkdirAll(def, 0o700); err != nil {
			return nil, fmt.Errorf("create the default file root: %w", err)
		}
		roots = []string{def}
	}
	for _, r := range roots {
		real, err := canonicalDir(r)
		if err != nil {
			return nil, fmt.Errorf("--file-root %s: %w", r, err)
		}
		if !slices.Contains(a.roots, real) {
			a.roots = append(a.roots, real)
		}
	}
	for _, f := range cfg.ServerFiles {
		if f == "" {
			continue
		}
		p, err := canonicalFile(f)
		if err != nil {
			return nil, fmt.Errorf("resolve server file %s: %w", f, err)
		}
		if !slices.Contains(a.denied, p) {
			a.denied = append(a.denied, p)
		}
	}
	for _, d := range cfg.PluginDirs {
		if real, err := canonicalDir(d); err == nil && !slices.Contains(a.dirs, real) {
			a.dirs = append(a.dirs, real)
		}
	}
	a.Refresh()
	return a, nil
}

// HistoryFiles are the files of a SQLite history database at path: the
// database, its journal, WAL and shared-memory files, the lock faucet serve
// holds on it and the admin token stored beside it.
func HistoryFiles(path string) []string {
	if path == "" {
		return nil
	}
	return []string{path, path + "-wal", path + "-shm", path + "-journal", path + ".lock", path + ".token"}
}

// canonicalDir is the absolute path of an existing directory with every
// symlink resolved.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", errors.New("not a directory")
	}
	return real, nil
}

// canonicalFile is the absolute path of a file whose directory's symlinks
// are resolved (the file itself need not exist, nor its directory).
func canonicalFile(name string) (string, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	dir, base := filepath.Split(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(real, base), nil
	}
	return abs, nil
}

// Refresh takes the identity of the server files again: one created since
// (the history database, once it is opened) is then refused by every name
// that reaches it too.
func (a *Access) Refresh() {
	denied := make([]sdk.DeniedFile, 0, len(a.denied)+len(a.dirs))
	for _, p := range a.denied {
		d := sdk.DeniedFile{Path: p}
		if fi, err := os.Stat(p); err == nil {
			d.Device, d.Inode, _ = sdk.FileID(fi)
		}
		denied = append(denied, d)
	}
	for _, dir := range a.dirs {
		denied = append(denied, sdk.DeniedFile{Path: dir, Dir: true})
	}
	a.files.Store(sdk.NewFiles(a.roots, denied))
}

// Roots returns the resolved roots, the first one first.
func (a *Access) Roots() []string { return slices.Clone(a.roots) }

// Files returns the file access every connector call of a run carries.
func (a *Access) Files() *sdk.Files { return a.files.Load() }

// Check refuses a path of a submitted config that no run could open: one
// outside the roots, one whose way leads out of them, or one of the
// server's own files; and a directory where a file is to be written
// (access "write").
func (a *Access) Check(access, name string) error {
	f := a.Files()
	if err := f.Check(name); err != nil {
		return err
	}
	if access == "write" && !strings.ContainsAny(name, `*?[\`) {
		if fi, err := f.Stat(name); err == nil && fi.IsDir() {
			return fmt.Errorf("path %s is a directory, not a file to write", name)
		}
	}
	return nil
}
