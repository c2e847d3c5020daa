package sdk

import (
	"unsafe"

	"github.com/faucet-dev/faucet/plugins/internal/jsonesc"
)

// AppendString appends s to dst as a JSON string, quoted and escaped, with
// invalid UTF-8 replaced by U+FFFD as encoding/json does. It exists so a
// source building records with BatchWriter.AppendFunc need not allocate.
func AppendString(dst []byte, s string) []byte {
	return AppendStringBytes(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// AppendStringBytes is AppendString for text held in a byte slice.
func AppendStringBytes(dst []byte, s []byte) []byte {
	dst = append(dst, '"')
	dst = jsonesc.Append(dst, s)
	return append(dst, '"')
}
