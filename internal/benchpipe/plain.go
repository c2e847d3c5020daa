package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"unicode/utf8"
)

// plain is the CSV → JSONL reference: the program one would write for the
// job with the standard library alone, in one goroutine: read a record
// (joining lines while a quoted field is open), split it, escape each
// field into a JSON string, write the line. It produces exactly what
// faucet's csv → jsonl pipeline does for the benchmark dataset (run
// checks), so the two are timed doing the same work.
func plain(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: benchpipe plain IN.csv OUT.jsonl")
	}
	in, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(args[1])
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	var rec, line, field []byte
	next := func() (bool, error) {
		rec = rec[:0]
		for {
			b, err := r.ReadSlice('\n')
			rec = append(rec, b...)
			if err != nil && err != bufio.ErrBufferFull {
				if len(rec) == 0 {
					return false, nil
				}
				break
			}
			if err == nil && bytes.Count(rec, []byte{'"'})%2 == 0 {
				break
			}
		}
		rec = bytes.TrimRight(rec, "\r\n")
		return true, nil
	}
	if ok, err := next(); !ok || err != nil {
		return fmt.Errorf("%s has no header", args[0])
	}
	var keys [][]byte
	for _, h := range bytes.Split(rec, []byte{','}) {
		k := appendJSONString(nil, h)
		keys = append(keys, append(k, ':'))
	}
	for {
		ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if len(rec) == 0 {
			continue
		}
		line, err = appendObject(line[:0], keys, rec, &field)
		if err != nil {
			return err
		}
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Close()
}

// appendObject appends one CSV record as a JSON object line; field is
// scratch space for unquoting.
func appendObject(dst []byte, keys [][]byte, rec []byte, field *[]byte) ([]byte, error) {
	dst = append(dst, '{')
	for f := 0; ; f++ {
		if f >= len(keys) {
			return nil, fmt.Errorf("record has more than %d fields: %s", len(keys), rec)
		}
		if f > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, keys[f]...)
		if len(rec) > 0 && rec[0] == '"' {
			// A quoted field: "" is a quote; it ends at a lone quote.
			*field = (*field)[:0]
			rec = rec[1:]
			for {
				i := bytes.IndexByte(rec, '"')
				if i < 0 {
					return nil, fmt.Errorf("unterminated quoted field")
				}
				*field = append(*field, rec[:i]...)
				if i+1 < len(rec) && rec[i+1] == '"' {
					*field = append(*field, '"')
					rec = rec[i+2:]
					continue
				}
				rec = rec[i+1:]
				break
			}
			dst = appendJSONString(dst, *field)
		} else {
			i := bytes.IndexByte(rec, ',')
			if i < 0 {
				i = len(rec)
			}
			dst = appendJSONString(dst, rec[:i])
			rec = rec[i:]
		}
		if len(rec) == 0 {
			break
		}
		rec = rec[1:]
	}
	return append(dst, '}', '\n'), nil
}

// jsonSafe marks the bytes a JSON string holds as they are.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a JSON string the way encoding/json
// writes it with HTML escaping off: control characters, quotes and
// backslashes escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
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
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
