package files

import (
	"fmt"
	"path/filepath"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// CheckRead probes that the pattern names files and that each can be read.
func CheckRead(fs *sdk.Files, pattern string) []sdk.CheckItem {
	names, err := Expand(fs, pattern)
	if err != nil {
		return []sdk.CheckItem{{Name: "input files", Message: err.Error()}}
	}
	for _, n := range names {
		f, err := fs.Open(n)
		if err != nil {
			return []sdk.CheckItem{{Name: "read permission", Message: err.Error()}}
		}
		f.Close()
	}
	return []sdk.CheckItem{{Name: "input files", OK: true, Message: fmt.Sprintf("%d readable file(s)", len(names))}}
}

// CheckWrite probes that a file can be created next to path, where the
// sink writes its temporary file, without touching path itself.
func CheckWrite(fs *sdk.Files, path string) []sdk.CheckItem {
	abs, err := fs.Abs(path)
	if err != nil {
		return []sdk.CheckItem{{Name: "write permission", Message: err.Error()}}
	}
	dir := filepath.Dir(abs)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			dir = d
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if err := probeWrite(fs, dir); err != nil {
		return []sdk.CheckItem{{Name: "write permission", Message: err.Error()}}
	}
	return []sdk.CheckItem{{Name: "write permission", OK: true, Message: "can write in " + dir}}
}

// probeWrite creates a temporary file in dir and removes it again.
func probeWrite(fs *sdk.Files, dir string) error {
	folder, err := fs.Folder(filepath.Join(dir, "check"), false)
	if err != nil {
		return err
	}
	defer folder.Close()
	f, name, err := createTemp(folder, folder.Base())
	if err != nil {
		return err
	}
	f.Close()
	return folder.Remove(name)
}
