package sdk

import (
	"os"
	"strconv"
)

// realPath is where an open file is, as the kernel resolved it: the target
// of its /proc/self/fd link; "" when that cannot be read.
func realPath(f *os.File) string {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || len(p) == 0 || p[0] != '/' {
		return ""
	}
	return p
}

// RealPath is where an open file is, as the kernel resolved it; "" where
// the platform does not say.
func RealPath(f *os.File) string { return realPath(f) }
