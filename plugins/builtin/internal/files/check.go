package files

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// CheckRead probes that the pattern names files and that each can be read.
func CheckRead(pattern string) []sdk.CheckItem {
	names, err := Expand(pattern)
	if err != nil {
		return []sdk.CheckItem{{Name: "input files", Message: err.Error()}}
	}
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return []sdk.CheckItem{{Name: "read permission", Message: err.Error()}}
		}
		f.Close()
	}
	return []sdk.CheckItem{{Name: "input files", OK: true, Message: fmt.Sprintf("%d readable file(s)", len(names))}}
}

// CheckWrite probes that a file can be created next to path, where the
// sink writes its temporary file, without touching path itself.
func CheckWrite(path string) []sdk.CheckItem {
	dir := filepath.Dir(path)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			dir = d
			break
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	f, err := os.CreateTemp(dir, ".faucet-check-*")
	if err != nil {
		return []sdk.CheckItem{{Name: "write permission", Message: err.Error()}}
	}
	f.Close()
	os.Remove(f.Name())
	return []sdk.CheckItem{{Name: "write permission", OK: true, Message: "can write in " + dir}}
}
