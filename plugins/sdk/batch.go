package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
)

// Batch limits. A batch is cut when it reaches MaxBatchRecords records or
// TargetBatchBytes bytes, whichever comes first; one record may not exceed
// MaxRecordBytes. Together they keep every message well under
// MaxMessageBytes, the gRPC message limit both sides of the protocol set.
const (
	MaxBatchRecords  = 8192
	TargetBatchBytes = 1 << 20
	MaxRecordBytes   = 8 << 20
	MaxMessageBytes  = protocol.MaxMessageBytes
)

// Batch is a run of records as they cross between processes: Count JSON
// objects in Records, each followed by "\n" (JSON Lines).
type Batch struct {
	// Seq numbers the batches of one read or write session from 1 upwards.
	Seq     uint64
	Count   int
	Records []byte
	// lender, set on a batch the SDK hands a writer, lends the memory
	// Records is in past the Write call (see Keep).
	lender lender
}

// lender lends a batch's memory to k, or reports that it cannot.
type lender interface {
	lend(k *Kept) bool
}

// Kept is a batch's records a writer reads after Write returns (Batch.Keep).
type Kept struct {
	records []byte
	release func()
}

// Keep keeps the batch's records for a writer that reads them after Write
// returns: to write them again, or to report a record it refuses later.
// The writer releases them once it no longer does, in Write, Close or
// Abort of the same session, and reads them through Records, which is
// valid until then. Where it can, the SDK lends the writer the memory the
// batch arrived in instead of copying it (a batch that crossed from the
// source in shared memory holds a slot until released, or until the SDK
// needs the slot back and moves the records out of it between two calls
// of the writer); otherwise the records are a copy.
func (b Batch) Keep() *Kept {
	k := &Kept{records: b.Records, release: func() {}}
	if b.lender == nil || !b.lender.lend(k) {
		k.records = bytes.Clone(b.Records)
	}
	return k
}

// Records returns the kept records. They may move between two calls of
// the writer, so a writer reads them through Records each time.
func (k *Kept) Records() []byte { return k.records }

// Release ends the keep: the records must not be read any more.
func (k *Kept) Release() {
	k.release()
	k.release = func() {}
}

// pooled lends a batch that arrived in a message: its buffer goes back to
// the codec's pool when released, or after Write when it was not kept.
type pooled struct {
	records []byte
	kept    bool
}

func (p *pooled) lend(k *Kept) bool {
	p.kept = true
	k.release = func() { protocol.Release(p.records) }
	return true
}

// done hands the buffer back after Write unless the writer kept it.
func (p *pooled) done() {
	if !p.kept {
		protocol.Release(p.records)
	}
}

// All iterates over the batch's records, each a JSON object without its
// trailing newline. The slices alias Records.
func (b Batch) All() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		rest := b.Records
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				i = len(rest)
			}
			if !yield(rest[:i]) {
				return
			}
			if i == len(rest) {
				return
			}
			rest = rest[i+1:]
		}
	}
}

// Field is one member of a JSON object, in the order the object lists them.
type Field struct {
	Key   string
	Value json.RawMessage
}

// Fields splits a record into its members in order, which a map would lose:
// a sink that creates columns from the first record keeps the source's order.
func Fields(record []byte) ([]Field, error) {
	return AppendFields(nil, record)
}

// AppendFields is Fields appending to dst, so a sink can reuse one slice
// across records.
func AppendFields(dst []Field, record []byte) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(record))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return dst, fmt.Errorf("decode record: %w", err)
	}
	if tok != json.Delim('{') {
		return dst, errors.New("decode record: not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return dst, fmt.Errorf("decode record: %w", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return dst, fmt.Errorf("decode record field %q: %w", key, err)
		}
		dst = append(dst, Field{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return dst, fmt.Errorf("decode record: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return dst, errors.New("decode record: trailing data after the object")
	}
	return dst, nil
}

// ErrRecordTooLarge is returned (wrapped, naming the record) by BatchWriter
// for a record over MaxRecordBytes.
var ErrRecordTooLarge = errors.New("record too large")

// BatchWriter collects a source's records into batches and sends each one
// when it is full. It is not safe for concurrent use.
type BatchWriter struct {
	emit func(Batch) error
	// next, when set, gives the buffer to collect the batch after an
	// emitted one in (a slot of a shared region), given the writer's own
	// emptied one, which it returns otherwise; grow, when set, may move the
	// batch being collected elsewhere once it reaches growAt bytes.
	next       func(own []byte) []byte
	grow       func(buf []byte) []byte
	growAt     int
	maxRecords int
	maxBytes   int
	buf        []byte
	count      int
	seq        uint64
	records    int64
	bytes      int64
}

// NewBatchWriter returns a BatchWriter handing each full batch to emit. The
// batch's Records are only valid during the call: the writer reuses its
// buffer for the next batch. faucet builds one for every Read; connector
// tests use it to collect what a source produces.
func NewBatchWriter(emit func(Batch) error) *BatchWriter {
	return &BatchWriter{emit: emit, maxRecords: MaxBatchRecords, maxBytes: TargetBatchBytes}
}

// Append marshals v (a struct or map) as one JSON object record.
func (w *BatchWriter) Append(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("record %d: encode: %w", w.records+1, err)
	}
	return w.AppendRaw(data)
}

// AppendRaw appends one record given as a JSON object. The bytes are copied;
// an object spread over several lines is compacted onto one.
func (w *BatchWriter) AppendRaw(object []byte) error {
	object = bytes.TrimSpace(object)
	if bytes.IndexByte(object, '\n') < 0 {
		return w.AppendFunc(func(dst []byte) ([]byte, error) { return append(dst, object...), nil })
	}
	return w.AppendFunc(func(dst []byte) ([]byte, error) {
		var out bytes.Buffer
		if err := json.Compact(&out, object); err != nil {
			return dst, err
		}
		return append(dst, out.Bytes()...), nil
	})
}

// AppendFunc appends one record in place, the fastest way to produce them:
// fn appends exactly one JSON object, on one line, to dst and returns the
// extended slice (AppendString helps encode strings).
func (w *BatchWriter) AppendFunc(fn func(dst []byte) ([]byte, error)) error {
	start := len(w.buf)
	buf, err := fn(w.buf)
	if err != nil {
		w.buf = w.buf[:start]
		return fmt.Errorf("record %d: %w", w.records+1, err)
	}
	rec := buf[start:]
	switch {
	case len(rec) > MaxRecordBytes:
		w.buf = buf[:start]
		return fmt.Errorf("record %d is %d bytes, over the %d-byte limit for one record: %w", w.records+1, len(rec), MaxRecordBytes, ErrRecordTooLarge)
	case len(rec) < 2 || rec[0] != '{' || rec[len(rec)-1] != '}' || bytes.IndexByte(rec, '\n') >= 0:
		w.buf = buf[:start]
		return fmt.Errorf("record %d is not a JSON object on one line", w.records+1)
	}
	w.buf = append(buf, '\n')
	w.count++
	w.records++
	if w.grow != nil && len(w.buf) >= w.growAt {
		w.buf = w.grow(w.buf)
	}
	if w.count >= w.maxRecords || len(w.buf) >= w.maxBytes {
		return w.Flush()
	}
	return nil
}

// Flush sends the records collected so far as a batch, if there are any.
// A source rarely needs it: faucet flushes when Read returns.
func (w *BatchWriter) Flush() error {
	if w.count == 0 {
		return nil
	}
	w.seq++
	b := Batch{Seq: w.seq, Count: w.count, Records: w.buf}
	w.bytes += int64(len(w.buf))
	w.count = 0
	err := w.emit(b)
	w.buf = w.buf[:0]
	if w.next != nil {
		w.buf = w.next(w.buf)
	}
	return err
}

// Records is the number of records appended so far.
func (w *BatchWriter) Records() int64 { return w.records }

// Bytes is the number of record bytes sent so far.
func (w *BatchWriter) Bytes() int64 { return w.bytes }
