//go:build !unix

package pipeline

import "os"

// lockFile is a no-op where there is no flock: one process's appends are
// still serialised.
func lockFile(*os.File) error { return nil }
