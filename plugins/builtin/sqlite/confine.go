package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// SQLite opens its files itself, by path, and opens more than the one it
// was given (the -journal, -wal and -shm files beside it). A confined
// session therefore hands it a path through a directory it resolved
// beneath its file roots and holds open: /proc/self/fd/N/name, where N is
// that directory. The kernel follows the /proc link to the directory it
// holds, so a rename of the path meanwhile leads nowhere else, and the os
// VFS opens the last element with O_NOFOLLOW, so a symlink planted there is
// refused. confinedVFS keeps SQLite from resolving the /proc link into a
// path of its own (FullPathname), refuses every other path, and closes and
// refuses a file that turns out to be one of the server's own. ATTACH (and
// VACUUM INTO, which attaches) is switched off on these connections, since
// it would open a path of the query's choosing.
const confinedVFSName = "faucet-confined"

// procFD is the prefix of the paths a confined session hands SQLite.
const procFD = "/proc/self/fd/"

// confined maps the directory handles of confined sessions to their file
// access.
var confined sync.Map // int (fd) → *sdk.Files

var registerVFS = sync.OnceValue(func() error {
	base, ok := vfs.Find("os").(vfs.VFSFilename)
	if !ok {
		return errors.New("the os VFS cannot open files by sqlite3_filename")
	}
	vfs.Register(confinedVFSName, confinedVFS{base})
	return nil
})

type confinedVFS struct{ base vfs.VFSFilename }

// session returns the file access of a path handed to SQLite, or false
// when no confined session handed it out.
func session(name string) (*sdk.Files, bool) {
	rest, ok := strings.CutPrefix(name, procFD)
	if !ok {
		return nil, false
	}
	n, _, ok := strings.Cut(rest, "/")
	if !ok {
		return nil, false
	}
	fd, err := strconv.Atoi(n)
	if err != nil {
		return nil, false
	}
	f, ok := confined.Load(fd)
	if !ok {
		return nil, false
	}
	return f.(*sdk.Files), true
}

func (v confinedVFS) FullPathname(name string) (string, error) {
	if _, ok := session(name); !ok {
		return "", sqlite3.CANTOPEN
	}
	return name, nil
}

func (v confinedVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	// Only a temporary file (no name) is opened this way.
	if name != "" {
		return nil, flags, sqlite3.CANTOPEN
	}
	return v.base.Open(name, flags)
}

func (v confinedVFS) OpenFilename(name *vfs.Filename, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if name == nil || name.String() == "" {
		return v.base.OpenFilename(name, flags)
	}
	files, ok := session(name.String())
	if !ok {
		return nil, flags, sqlite3.CANTOPEN
	}
	file, flags, err := v.base.OpenFilename(name, flags)
	if err != nil {
		return nil, flags, err
	}
	if err := admit(files, file); err != nil {
		file.Close()
		return nil, flags, sqlite3.CANTOPEN
	}
	return file, flags, nil
}

// admit refuses a file SQLite opened that is one of the server's own.
func admit(files *sdk.Files, file vfs.File) error {
	osf, ok := file.(interface {
		Stat() (fs.FileInfo, error)
		Fd() uintptr
	})
	if !ok {
		return errors.New("cannot check the identity of the file SQLite opened")
	}
	fi, err := osf.Stat()
	if err != nil {
		return err
	}
	real, _ := os.Readlink(procFD + strconv.Itoa(int(osf.Fd())))
	return files.Admit(fi, real)
}

func (v confinedVFS) Delete(name string, syncDir bool) error {
	if _, ok := session(name); !ok {
		return sqlite3.CANTOPEN
	}
	return v.base.Delete(name, syncDir)
}

func (v confinedVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	if _, ok := session(name); !ok {
		return false, nil
	}
	return v.base.Access(name, flags)
}

// confinedPath resolves path beneath the session's file roots and returns
// the name to hand SQLite, with the function that ends the session's hold
// on the directory.
func confinedPath(files *sdk.Files, path string) (string, func(), error) {
	if runtime.GOOS != "linux" {
		return "", nil, fmt.Errorf("sqlite database %s: the sqlite connector cannot be confined to file roots on %s", path, runtime.GOOS)
	}
	if err := registerVFS(); err != nil {
		return "", nil, err
	}
	dir, base, err := files.Dir(path)
	if err != nil {
		return "", nil, fmt.Errorf("sqlite database: %w", err)
	}
	fd := int(dir.Fd())
	confined.Store(fd, files)
	release := func() {
		confined.Delete(fd)
		dir.Close()
	}
	return procFD + strconv.Itoa(fd) + "/" + base, release, nil
}

// noAttach keeps a confined connection from attaching databases by a path
// of the query's own.
func noAttach(c *sqlite3.Conn) error {
	c.Limit(sqlite3.LIMIT_ATTACHED, 0)
	return nil
}
