//go:build unix

package pipeline

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, released when f is
// closed, so the appends of several processes to one file never interleave.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}
