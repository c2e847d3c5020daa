//go:build !unix

package sdk

import "io/fs"

func fileID(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }
