package csv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/faucet-dev/faucet/plugins/internal/jsonesc"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// scanner turns CSV rows straight into JSON objects without materialising
// each field as a string: unquoted fields are escaped from the read buffer
// into the batch in one pass. It follows encoding/csv's RFC 4180 rules
// (quoted fields may hold delimiters, doubled quotes and newlines; "\r\n"
// ends a line like "\n"; empty lines are skipped; a bare quote in an
// unquoted field is an error) for one-byte delimiters without lazy quotes,
// the common case; the rest goes through encoding/csv.
type scanner struct {
	r     *bufio.Reader
	delim byte
	file  string
	// line is the number of the next line to read.
	line int
	rec  []byte
	// autoKeys names columns column_1… from the first record's width.
	autoKeys bool
	// plain marks the bytes an unquoted field copies as they are: those
	// JSON strings hold unescaped, but the delimiter; inQuotes, those a
	// quoted field does.
	plain, inQuotes [256]bool
}

func newScanner(r io.Reader, delim byte, file string) *scanner {
	s := &scanner{r: bufio.NewReaderSize(r, 1<<20), delim: delim, file: file, line: 1}
	for c := range 256 {
		s.inQuotes[c] = jsonesc.Plain(byte(c))
		s.plain[c] = s.inQuotes[c] && byte(c) != delim
	}
	return s
}

// next returns the next record's bytes (without its line ending) and the
// line it starts on, or io.EOF. A record spans lines while a quoted field
// is open, which shows as an odd number of quotes.
func (s *scanner) next() ([]byte, int, error) {
	for {
		start := s.line
		b, err := s.readLine()
		if err != nil {
			return nil, start, err
		}
		if bytes.Count(b, []byte{'"'})%2 == 1 {
			s.rec = append(s.rec[:0], b...)
			for bytes.Count(s.rec, []byte{'"'})%2 == 1 {
				more, err := s.readLine()
				if err == io.EOF {
					return nil, start, fmt.Errorf("%s: record on line %d: a quoted field is never closed", s.file, start)
				}
				if err != nil {
					return nil, start, err
				}
				s.rec = append(s.rec, '\n')
				s.rec = append(s.rec, more...)
			}
			b = s.rec
		}
		if len(b) > 0 {
			return b, start, nil
		}
	}
}

// readLine returns the next line without its "\n" or "\r\n".
func (s *scanner) readLine() ([]byte, error) {
	b, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = s.r.ReadSlice('\n')
			long = append(long, b...)
		}
		b = long
	}
	if err == io.EOF && len(b) > 0 {
		err = nil
	}
	if err != nil {
		if err != io.EOF {
			err = fmt.Errorf("read %s: %w", s.file, err)
		}
		return nil, err
	}
	s.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'}), nil
}

// appendObject appends rec as a JSON object with the given keys (each an
// encoded `"name":`). With autoKeys, the first record's width names them.
func (s *scanner) appendObject(dst []byte, keys *[][]byte, rec []byte, line int) ([]byte, error) {
	dst = append(dst, '{')
	field := 0
	for i := 0; ; field++ {
		if field >= len(*keys) {
			if !s.autoKeys {
				return dst, fmt.Errorf("%s: record on line %d has more than %d fields", s.file, line, len(*keys))
			}
			*keys = append(*keys, append(sdk.AppendString(nil, "column_"+strconv.Itoa(field+1)), ':'))
		}
		if field > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, (*keys)[field]...)
		if i < len(rec) && rec[i] == '"' {
			var err error
			if dst, i, err = s.appendQuoted(dst, rec, i+1, line); err != nil {
				return dst, err
			}
			if i == len(rec) {
				break
			}
			i++
			continue
		}
		dst = append(dst, '"')
		for {
			j := i
			for j < len(rec) && s.plain[rec[j]] {
				j++
			}
			dst = append(dst, rec[i:j]...)
			if i = j; i == len(rec) || rec[i] == s.delim {
				break
			}
			if rec[i] == '"' {
				return dst, fmt.Errorf("%s: record on line %d: bare \" in an unquoted field (quote the field and double the quote)", s.file, line)
			}
			var n int
			dst, n = jsonesc.AppendOne(dst, rec[i:])
			i += n
		}
		dst = append(dst, '"')
		if i == len(rec) {
			break
		}
		i++
	}
	s.autoKeys = false
	if field+1 != len(*keys) {
		return dst, fmt.Errorf("%s: record on line %d has %d fields, want %d", s.file, line, field+1, len(*keys))
	}
	return append(dst, '}'), nil
}

// appendQuoted appends the quoted field starting after its opening quote at
// rec[i:] and returns the index just past the closing quote, which must be
// followed by the delimiter or the end of the record.
func (s *scanner) appendQuoted(dst, rec []byte, i, line int) ([]byte, int, error) {
	dst = append(dst, '"')
	for {
		j := i
		for j < len(rec) && s.inQuotes[rec[j]] {
			j++
		}
		dst = append(dst, rec[i:j]...)
		i = j
		if i == len(rec) {
			return dst, i, fmt.Errorf("%s: record on line %d: a quoted field is never closed", s.file, line)
		}
		if rec[i] != '"' {
			var n int
			dst, n = jsonesc.AppendOne(dst, rec[i:])
			i += n
			continue
		}
		if i+1 < len(rec) && rec[i+1] == '"' {
			dst = append(dst, '\\', '"')
			i += 2
			continue
		}
		i++
		break
	}
	if i < len(rec) && rec[i] != s.delim {
		return dst, i, fmt.Errorf("%s: record on line %d: extraneous or missing \" in a quoted field", s.file, line)
	}
	return append(dst, '"'), i, nil
}
