// Package jsonesc escapes text for JSON strings fast: eight plain bytes at a
// time, escaping only what must be. The SDK's string encoders and the csv
// connector's scanner share it.
package jsonesc

import (
	"encoding/binary"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes that need no escaping inside a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether 8 bytes need no escaping: none is a control
// character, a quote, a backslash, or part of a multi-byte rune.
func plain8(x uint64) bool {
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	special := (x - ones*0x20) | (quote-ones)&^quote | (backslash-ones)&^backslash | x
	return special&highs == 0
}

// Append appends s escaped for the inside of a JSON string, without quotes.
// Invalid UTF-8 becomes U+FFFD, as with encoding/json.
func Append(dst, s []byte) []byte {
	start := 0
	i := 0
	for i < len(s) {
		if i+8 <= len(s) && plain8(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
			continue
		}
		if Plain(s[i]) {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		var n int
		dst, n = AppendOne(dst, s[i:])
		i += n
		start = i
	}
	return append(dst, s[start:]...)
}

// Plain reports whether c stands for itself inside a JSON string:
// printable ASCII but the quote and the backslash. A scanner with stops of
// its own (a CSV delimiter) copies runs of such bytes and hands the others
// to AppendOne.
func Plain(c byte) bool { return c < utf8.RuneSelf && safeASCII[c] }

// AppendOne appends s's first character (a byte, or a whole UTF-8 rune)
// escaped for a JSON string, and returns how many bytes of s it used:
// quotes, backslashes and control characters escaped, invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped, as encoding/json writes them.
func AppendOne(dst, s []byte) ([]byte, int) {
	c := s[0]
	if c < utf8.RuneSelf {
		switch {
		case safeASCII[c]:
			return append(dst, c), 1
		case c == '"' || c == '\\':
			return append(dst, '\\', c), 1
		case c == '\n':
			return append(dst, '\\', 'n'), 1
		case c == '\r':
			return append(dst, '\\', 'r'), 1
		case c == '\t':
			return append(dst, '\\', 't'), 1
		}
		return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF]), 1
	}
	r, size := utf8.DecodeRune(s)
	switch {
	case r == utf8.RuneError && size == 1:
		return append(dst, `\ufffd`...), 1
	case r == '\u2028' || r == '\u2029':
		return append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF]), size
	}
	return append(dst, s[:size]...), size
}
