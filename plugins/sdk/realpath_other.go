//go:build !linux

package sdk

import "os"

func realPath(*os.File) string { return "" }

// RealPath is where an open file is, as the kernel resolved it; "" where
// the platform does not say.
func RealPath(f *os.File) string { return realPath(f) }
