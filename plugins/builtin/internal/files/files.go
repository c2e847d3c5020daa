// Package files is what the file connectors (csv, jsonl) share: expanding a
// path or glob into files, splitting them into shards by file and by byte
// range, reading one shard, and writing an output file atomically. Every
// file is opened through the session's sdk.Files, so under faucet serve
// they stay within its file roots.
package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/configmemo"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Part is a whole file or a byte range of one. A range starts at the first
// byte of a record and ends just after the last byte of one, so reading the
// parts of a split file yields every record exactly once.
type Part struct {
	File string `json:"file"`
	// Start and End bound the range; End 0 means the end of the file.
	Start int64 `json:"start,omitempty"`
	End   int64 `json:"end,omitempty"`
}

// Descriptor is the shard descriptor of the file connectors.
type Descriptor struct {
	Parts []Part `json:"parts"`
}

// Expand returns the files a path or glob names, sorted. Naming nothing is
// an error: a missing input file must not read as an empty source.
func Expand(fs *sdk.Files, pattern string) ([]string, error) {
	if !strings.ContainsAny(pattern, `*?[\`) {
		// A plain path names one file, whose problem (missing, refused) is
		// said as it is.
		fi, err := fs.Stat(pattern)
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("input file: %s is not a regular file", pattern)
		}
		name, err := fs.Abs(pattern)
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		if !fs.Confined() {
			name = pattern
		}
		return []string{name}, nil
	}
	matches, err := fs.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("input files: %w", err)
	}
	var out []string
	for _, m := range matches {
		fi, err := fs.Stat(m)
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		if fi.Mode().IsRegular() {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("input file: no regular file matches %q", pattern)
	}
	sort.Strings(out)
	return out, nil
}

// Parts returns what a read covers: the shard's parts, or every file the
// pattern names when shard is nil.
func Parts(fs *sdk.Files, pattern string, shard *sdk.Shard) ([]Part, error) {
	if shard != nil {
		var d Descriptor
		if err := json.Unmarshal(shard.Descriptor, &d); err != nil {
			return nil, fmt.Errorf("decode shard descriptor: %w", err)
		}
		return d.Parts, nil
	}
	names, err := Expand(fs, pattern)
	if err != nil {
		return nil, err
	}
	parts := make([]Part, len(names))
	for i, n := range names {
		parts[i] = Part{File: n}
	}
	return parts, nil
}

// Boundaries finds record starts in a file for byte-range sharding. It is
// given the file and the candidate offsets in ascending order and returns
// the record start at or after each (or the file size when none follows).
type Boundaries func(f *os.File, size int64, candidates []int64) ([]int64, error)

// Shards splits the files a pattern names into at most count shards: one
// or more whole files per shard when there are at least count files (by
// size, greedily), otherwise one shard per file, except that a single file
// is split into count byte ranges at record starts found by bounds.
func Shards(fs *sdk.Files, pattern string, count int, bounds Boundaries) ([]sdk.Shard, error) {
	names, err := Expand(fs, pattern)
	if err != nil {
		return nil, err
	}
	count = max(count, 1)
	sizes := make([]int64, len(names))
	for i, n := range names {
		fi, err := fs.Stat(n)
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		sizes[i] = fi.Size()
	}
	if len(names) == 1 && count > 1 {
		return splitFile(fs, names[0], sizes[0], count, bounds)
	}
	groups := make([]Descriptor, min(count, len(names)))
	groupSize := make([]int64, len(groups))
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return sizes[order[a]] > sizes[order[b]] })
	for _, i := range order {
		g := 0
		for j := range groups {
			if groupSize[j] < groupSize[g] {
				g = j
			}
		}
		groups[g].Parts = append(groups[g].Parts, Part{File: names[i]})
		groupSize[g] += sizes[i]
	}
	shards := make([]sdk.Shard, 0, len(groups))
	for g, d := range groups {
		sort.Slice(d.Parts, func(a, b int) bool { return d.Parts[a].File < d.Parts[b].File })
		desc, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		shards = append(shards, sdk.Shard{Descriptor: desc, EstimatedBytes: groupSize[g]})
	}
	return shards, nil
}

func splitFile(fs *sdk.Files, name string, size int64, count int, bounds Boundaries) ([]sdk.Shard, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("input file: %w", err)
	}
	defer f.Close()
	candidates := make([]int64, 0, count-1)
	for i := 1; i < count; i++ {
		candidates = append(candidates, size*int64(i)/int64(count))
	}
	cuts, err := bounds(f, size, candidates)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", name, err)
	}
	var shards []sdk.Shard
	start := int64(0)
	for _, end := range append(cuts, size) {
		if end <= start {
			continue
		}
		p := Part{File: name, Start: start, End: end}
		desc, err := json.Marshal(Descriptor{Parts: []Part{p}})
		if err != nil {
			return nil, err
		}
		shards = append(shards, sdk.Shard{Descriptor: desc, EstimatedBytes: end - start})
		start = end
	}
	return shards, nil
}

// LineStarts is the Boundaries of formats whose records never span lines
// (JSON Lines): the start of the line after each candidate.
func LineStarts(f *os.File, size int64, candidates []int64) ([]int64, error) {
	out := make([]int64, 0, len(candidates))
	for _, c := range candidates {
		if c == 0 {
			out = append(out, 0)
			continue
		}
		// The record containing byte c-1 ends at the next newline at or after c-1.
		r := bufio.NewReader(io.NewSectionReader(f, c-1, size-(c-1)))
		n, err := r.ReadSlice('\n')
		pos := c - 1 + int64(len(n))
		for errors.Is(err, bufio.ErrBufferFull) {
			n, err = r.ReadSlice('\n')
			pos += int64(len(n))
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		out = append(out, pos)
	}
	return out, nil
}

// QuotedLineStarts is the Boundaries of CSV, whose quoted fields may hold
// newlines: it scans the file from the start, tracking whether it is inside
// quotes, and cuts only at a newline outside them. An escaped quote ("")
// toggles twice, so counting quotes is exact for RFC 4180 files. Whether a
// byte is inside quotes depends only on how many quotes precede it, so the
// chunks before the next candidate are only counted (bytes.Count, which is
// vectorised), and only the chunk a candidate falls in is walked quote by
// quote: a split costs little more than reading the file up to its last cut.
func QuotedLineStarts(quote byte) Boundaries {
	stops := string([]byte{quote, '\n'})
	quotes := []byte{quote}
	return func(f *os.File, size int64, candidates []int64) ([]int64, error) {
		out := make([]int64, 0, len(candidates))
		buf := make([]byte, 1<<20)
		var (
			pos      int64
			inQuotes bool
			next     int
		)
		for next < len(candidates) && pos < size {
			n, err := f.ReadAt(buf, pos)
			if err != nil && err != io.EOF {
				return nil, err
			}
			if n == 0 {
				break
			}
			chunk := buf[:n]
			if pos+int64(n) < candidates[next] {
				// No line in this chunk starts at or after the candidate.
				if bytes.Count(chunk, quotes)%2 == 1 {
					inQuotes = !inQuotes
				}
				pos += int64(n)
				continue
			}
			for i := 0; i < len(chunk) && next < len(candidates); i++ {
				j := bytes.IndexAny(chunk[i:], stops)
				if j < 0 {
					break
				}
				i += j
				if chunk[i] == quote {
					inQuotes = !inQuotes
					continue
				}
				if inQuotes {
					continue
				}
				start := pos + int64(i) + 1
				for next < len(candidates) && candidates[next] <= start {
					out = append(out, start)
					next++
				}
			}
			pos += int64(n)
		}
		for next < len(candidates) {
			out = append(out, size)
			next++
		}
		return out, nil
	}
}

// Open returns a reader of one part: the whole file, or its byte range.
func Open(fs *sdk.Files, p Part) (io.ReadCloser, error) {
	f, err := fs.Open(p.File)
	if err != nil {
		return nil, fmt.Errorf("input file: %w", err)
	}
	if p.Start == 0 && p.End == 0 {
		return f, nil
	}
	end := p.End
	if end == 0 {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		end = fi.Size()
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, p.Start, end-p.Start), f}, nil
}

// paths are the paths of the configs Datasets was asked about.
var paths = configmemo.New[string]()

// Datasets describes a session of a file connector, whose source and sink
// configs both name their file (or glob) in path: one dataset, whose
// schema is what the session's records showed.
func Datasets(ctx context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	path, err := paths.Get(req.Config, func(config []byte) (string, error) {
		var cfg struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(config, &cfg); err != nil {
			return "", fmt.Errorf("decode config: %w", err)
		}
		return cfg.Path, nil
	})
	if err != nil {
		return nil, err
	}
	uri, err := sdk.FileURI(ctx, path)
	if err != nil {
		return nil, err
	}
	return []sdk.Dataset{{URI: uri}}, nil
}
