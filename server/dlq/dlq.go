// Package dlq serves faucet serve's dead-letter routes: inspecting a
// dead-letter file (a summary by reason and error kind, and a page of its
// letters), replaying its records as a normal run into a config's sink
// (whose failures land in a fresh dead-letter file), and discarding letters
// by archiving or deleting them. Every file is reached through the server's
// file roots, as a run's are.
package dlq

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Reasons are the dead letters' reasons a filter may name (the Rust
// faucet's closed set).
var Reasons = []string{"partial", "dlq_all", "quality", "schema_drift", "contract"}

// BadRequestError is a request the service refuses (400): a bad location,
// reason or config.
type BadRequestError struct{ Err error }

func (e *BadRequestError) Error() string { return e.Err.Error() }
func (e *BadRequestError) Unwrap() error { return e.Err }

func bad(format string, args ...any) error {
	return &BadRequestError{Err: fmt.Errorf(format, args...)}
}

// Service reads and rewrites dead-letter files.
type Service struct {
	files func() *sdk.Files
}

// New returns the service over the server's file access.
func New(files func() *sdk.Files) *Service { return &Service{files: files} }

// Letter is one dead letter as inspect shows it.
type Letter struct {
	Reason       *string         `json:"reason"`
	ErrorKind    *string         `json:"error_kind"`
	ErrorMessage *string         `json:"error_message"`
	Pipeline     *string         `json:"pipeline"`
	Row          *string         `json:"row"`
	RecordIndex  *int64          `json:"record_index"`
	Payload      json.RawMessage `json:"payload"`
	Connector    *string         `json:"connector,omitempty"`
	RunID        *string         `json:"run_id,omitempty"`
	Attempt      *int64          `json:"attempt,omitempty"`
	TsMS         *int64          `json:"ts_ms,omitempty"`
}

// parse reads one line; ok is false for a line that is no dead letter.
// malformed tells a line that is not JSON from valid JSON that is no
// letter.
func parse(line []byte) (l Letter, ok, malformed bool) {
	var raw struct {
		Payload json.RawMessage `json:"payload"`
		Error   *struct {
			Kind    *string `json:"kind"`
			Message *string `json:"message"`
		} `json:"error"`
		Reason      *string `json:"reason"`
		Pipeline    *string `json:"pipeline"`
		Row         *string `json:"row"`
		RecordIndex *int64  `json:"record_index"`
		Connector   *string `json:"connector"`
		Sink        *string `json:"sink"`
		RunID       *string `json:"run_id"`
		Attempt     *int64  `json:"attempt"`
		TsMS        *int64  `json:"ts_ms"`
	}
	if !json.Valid(line) {
		return Letter{}, false, true
	}
	if json.Unmarshal(line, &raw) != nil || len(raw.Payload) == 0 {
		return Letter{}, false, false
	}
	l = Letter{Reason: raw.Reason, Pipeline: raw.Pipeline, Row: raw.Row, RecordIndex: raw.RecordIndex, Payload: raw.Payload,
		Connector: raw.Connector, RunID: raw.RunID, Attempt: raw.Attempt, TsMS: raw.TsMS}
	if l.Connector == nil {
		l.Connector = raw.Sink
	}
	if raw.Error != nil {
		l.ErrorKind, l.ErrorMessage = raw.Error.Kind, raw.Error.Message
	}
	return l, true, false
}

func (l Letter) matches(reason string) bool {
	return reason == "" || (l.Reason != nil && *l.Reason == reason)
}

func checkReason(reason string) error {
	if reason != "" && !slices.Contains(Reasons, reason) {
		return bad("unknown reason %q; expected one of %s", reason, strings.Join(Reasons, ", "))
	}
	return nil
}

// expand lists the files a location names: a file, the *.jsonl files of a
// directory, or a glob's matches, sorted, archives left out.
func (s *Service) expand(location string) ([]string, error) {
	if location == "" {
		return nil, bad("location is empty")
	}
	files := s.files()
	var names []string
	if strings.ContainsAny(location, `*?[\`) {
		m, err := files.Glob(location)
		if err != nil {
			return nil, &BadRequestError{Err: err}
		}
		names = m
	} else {
		fi, err := files.Stat(location)
		if err != nil {
			return nil, &BadRequestError{Err: err}
		}
		if !fi.IsDir() {
			abs, err := files.Abs(location)
			if err != nil {
				return nil, err
			}
			return []string{abs}, nil
		}
		if names, err = files.Glob(filepath.Join(location, "*.jsonl")); err != nil {
			return nil, &BadRequestError{Err: err}
		}
	}
	var out []string
	for _, n := range names {
		if fi, err := files.Stat(n); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(n, archiveSuffix) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, bad("location %s names no dead-letter file", location)
	}
	slices.Sort(out)
	return out, nil
}

// scan calls each with every line of the files (as read, newline dropped).
func (s *Service) scan(files []string, each func(file string, line []byte) error) error {
	fs := s.files()
	for _, name := range files {
		f, err := fs.Open(name)
		if err != nil {
			return &BadRequestError{Err: err}
		}
		br := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
				if cerr := each(name, trimmed); cerr != nil {
					f.Close()
					return cerr
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("read %s: %w", name, err)
			}
		}
		f.Close()
	}
	return nil
}

// InspectRequest asks for a summary of a location and a page of letters.
type InspectRequest struct {
	Location string
	Reason   string
	// Limit letters from Offset (in file and line order) are returned.
	Limit, Offset int
}

// Summary is what inspect says of a location.
type Summary struct {
	Location  string `json:"location"`
	FilesRead int    `json:"files_read"`
	// TotalEnvelopes counts the letters matching the reason filter.
	TotalEnvelopes int `json:"total_envelopes"`
	// Malformed counts the lines that are not JSON, NonEnvelope the JSON
	// lines that are no letter.
	Malformed   int `json:"malformed"`
	NonEnvelope int `json:"non_envelope"`
	// Undecryptable is always 0: this server seals no dead letters.
	Undecryptable int            `json:"undecryptable"`
	ByReason      map[string]int `json:"by_reason"`
	ByErrorKind   map[string]int `json:"by_error_kind"`
	Sample        []Letter       `json:"sample"`
	// NextOffset is where the next page of letters starts; nil after the
	// last.
	NextOffset *int `json:"next_offset"`
}

// Inspect summarises the letters of a location.
func (s *Service) Inspect(_ context.Context, req InspectRequest) (Summary, error) {
	if err := checkReason(req.Reason); err != nil {
		return Summary{}, err
	}
	files, err := s.expand(req.Location)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Location: req.Location, FilesRead: len(files), ByReason: map[string]int{}, ByErrorKind: map[string]int{}, Sample: []Letter{}}
	err = s.scan(files, func(_ string, line []byte) error {
		l, ok, malformed := parse(line)
		switch {
		case malformed:
			sum.Malformed++
		case !ok:
			sum.NonEnvelope++
		case l.matches(req.Reason):
			if sum.TotalEnvelopes >= req.Offset && len(sum.Sample) < req.Limit {
				sum.Sample = append(sum.Sample, l)
			}
			sum.TotalEnvelopes++
			sum.ByReason[deref(l.Reason)]++
			sum.ByErrorKind[deref(l.ErrorKind)]++
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	if next := req.Offset + req.Limit; next < sum.TotalEnvelopes {
		sum.NextOffset = &next
	}
	return sum, nil
}

func deref(s *string) string {
	if s == nil {
		return "unknown"
	}
	return *s
}

// ReplayRequest asks to replay a location's records through a config.
type ReplayRequest struct {
	Config       string
	ConfigFormat string
	From         string
	Reason       string
	// FailedDLQ is where records that fail again go; "" is beside From.
	FailedDLQ string
	Row       string
}

// ReplayPlan is a replay ready to submit: its config, and what it replays.
type ReplayPlan struct {
	// Config is the replay's pipeline config (JSON).
	Config []byte
	// From is the absolute location replayed, FailedDLQ where its failures
	// go, Candidates the letters it feeds the sink.
	From, FailedDLQ string
	Candidates      int
}

// PlanReplay checks a replay and builds its config: the location must hold
// dead letters (a file with none, but other lines, is no dead-letter file),
// and the failures' file must be another.
func (s *Service) PlanReplay(_ context.Context, req ReplayRequest) (ReplayPlan, error) {
	if err := checkReason(req.Reason); err != nil {
		return ReplayPlan{}, err
	}
	files, err := s.expand(req.From)
	if err != nil {
		return ReplayPlan{}, err
	}
	perFile := map[string][2]int{} // letters, other lines
	candidates := 0
	err = s.scan(files, func(file string, line []byte) error {
		c := perFile[file]
		if l, ok, _ := parse(line); ok {
			c[0]++
			if l.matches(req.Reason) {
				candidates++
			}
		} else {
			c[1]++
		}
		perFile[file] = c
		return nil
	})
	if err != nil {
		return ReplayPlan{}, err
	}
	for _, f := range files {
		if c := perFile[f]; c[0] == 0 && c[1] > 0 {
			return ReplayPlan{}, bad("%s is not a dead-letter file: none of its %d line(s) is a dead letter", f, c[1])
		}
	}
	fs := s.files()
	from := files[0]
	if len(files) > 1 || strings.ContainsAny(req.From, `*?[\`) {
		if from, err = fs.Abs(req.From); err != nil {
			return ReplayPlan{}, err
		}
	}
	failed := req.FailedDLQ
	if failed == "" {
		failed = pipeline.DefaultFailedDLQ(from)
	}
	if failed, err = fs.Abs(failed); err != nil {
		return ReplayPlan{}, err
	}
	if slices.Contains(files, failed) {
		return ReplayPlan{}, bad("failed_dlq %s is one of the files being replayed: records that fail again would land back in it", failed)
	}
	cfg, err := pipeline.ReplayConfig([]byte(req.Config), pipeline.Format(req.ConfigFormat), pipeline.Replay{
		From: from, Reason: req.Reason, Row: req.Row, FailedDLQ: failed,
	})
	if err != nil {
		return ReplayPlan{}, &BadRequestError{Err: err}
	}
	return ReplayPlan{Config: cfg, From: from, FailedDLQ: failed, Candidates: candidates}, nil
}

// DiscardRequest asks to remove letters from a location.
type DiscardRequest struct {
	Location string
	Reason   string
	// BeforeMS, when set, keeps the letters written at or after it (epoch
	// milliseconds).
	BeforeMS *int64
	// Delete drops the letters instead of archiving them.
	Delete bool
}

// DiscardOutcome says what a discard removed.
type DiscardOutcome struct {
	Discarded      int      `json:"discarded"`
	FilesRewritten int      `json:"files_rewritten"`
	ArchivedTo     []string `json:"archived_to"`
}

// archiveSuffix names the file a dead-letter file's discarded letters are
// archived in: dead.jsonl archives into dead.archived.jsonl.
const archiveSuffix = ".archived.jsonl"

// ArchivePath is where the discarded letters of file go.
func ArchivePath(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + archiveSuffix
}

// Discard removes the matching letters of every file of a location,
// keeping every other line as it is: appended to the file's archive first
// unless Delete, then the file rewritten whole (a temporary file renamed
// over it, so a crash leaves the old file or the new one).
func (s *Service) Discard(_ context.Context, req DiscardRequest) (DiscardOutcome, error) {
	if err := checkReason(req.Reason); err != nil {
		return DiscardOutcome{}, err
	}
	files, err := s.expand(req.Location)
	if err != nil {
		return DiscardOutcome{}, err
	}
	out := DiscardOutcome{ArchivedTo: []string{}}
	for _, file := range files {
		var kept, removed bytes.Buffer
		n := 0
		err := s.scan([]string{file}, func(_ string, line []byte) error {
			l, ok, _ := parse(line)
			if ok && l.matches(req.Reason) && (req.BeforeMS == nil || (l.TsMS != nil && *l.TsMS < *req.BeforeMS)) {
				n++
				removed.Write(line)
				removed.WriteByte('\n')
				return nil
			}
			kept.Write(line)
			kept.WriteByte('\n')
			return nil
		})
		if err != nil {
			return out, err
		}
		if n == 0 {
			continue
		}
		if !req.Delete {
			archive := ArchivePath(file)
			if err := s.appendTo(archive, removed.Bytes()); err != nil {
				return out, err
			}
			out.ArchivedTo = append(out.ArchivedTo, archive)
		}
		if err := s.rewrite(file, kept.Bytes()); err != nil {
			return out, err
		}
		out.Discarded += n
		out.FilesRewritten++
	}
	return out, nil
}

func (s *Service) appendTo(name string, data []byte) error {
	f, err := s.files().OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("archive dead letters in %s: %w", name, err)
	}
	return f.Close()
}

// rewrite replaces file with data through a temporary file beside it.
func (s *Service) rewrite(file string, data []byte) error {
	fs := s.files()
	dir, base := filepath.Split(file)
	tmp := filepath.Join(dir, "."+base+".faucet-discard-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = fs.Rename(tmp, file)
	}
	if werr != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("rewrite %s: %w", file, werr)
	}
	return nil
}
