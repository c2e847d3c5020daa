//go:build unix

package server

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an advisory lock on path. A server outside a cluster takes
// it exclusively, so two servers never share one SQLite history file: the
// server holding it may treat every unfinished run in the file as its own
// crash's orphan. Cluster members take it shared: they share the file with
// each other, never with a server outside the cluster. The lock dies with the
// process, even on kill -9.
func lockFile(path string, shared bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open history lock: %w", err)
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		switch {
		case errors.Is(err, syscall.EWOULDBLOCK) && shared:
			return nil, settingError([]string{"Cluster"}, "history file is in use by a faucet serve outside the cluster (lock %[2]s is held); start every server on it with %[1]s", path)
		case errors.Is(err, syscall.EWOULDBLOCK):
			return nil, settingError([]string{"Cluster"}, "history file is in use by another faucet serve (lock %[2]s is held); servers share a history only with %[1]s", path)
		}
		return nil, fmt.Errorf("lock history: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
