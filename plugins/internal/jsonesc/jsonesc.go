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

// plain8 reports whether 8 bytes need no escaping and hold no stop byte:
// none is a control character, a quote, a backslash, the stop byte, or part
// of a multi-byte rune.
func plain8(x, stop uint64) bool {
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	st := x ^ stop
	special := (x - ones*0x20) | (quote-ones)&^quote | (backslash-ones)&^backslash | (st-ones)&^st | x
	return special&highs == 0
}

// NoStop is a stop value that matches no byte.
const NoStop = -1

// AppendUntil appends s escaped for the inside of a JSON string, without
// quotes, up to the first byte equal to stop (NoStop: all of s), and returns
// how many bytes of s it consumed. Invalid UTF-8 becomes U+FFFD, as with
// encoding/json.
func AppendUntil(dst, s []byte, stop int) ([]byte, int) {
	// A stop byte of '"' (or any byte the escaper stops at anyway) needs no
	// lane of its own; NoStop repeats the quote for the same reason.
	stopLane := uint64(ones * '"')
	if stop >= 0 && stop < utf8.RuneSelf {
		stopLane = ones * uint64(stop)
	}
	start := 0
	i := 0
	for i < len(s) {
		if i+8 <= len(s) && plain8(binary.LittleEndian.Uint64(s[i:]), stopLane) {
			i += 8
			continue
		}
		c := s[i]
		if int(c) == stop {
			return append(dst, s[start:i]...), i
		}
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...), len(s)
}
