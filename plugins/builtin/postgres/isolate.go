package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// A session with a record policy (the pipeline dead-letters or drops the
// records a sink refuses) isolates the records the table will not take,
// without giving up the COPY stream for the others:
//
//   - A value its column cannot hold (a malformed number, boolean or UUID,
//     text longer than its column, a null for a NOT NULL column) is found as
//     the batch is encoded, before the server sees it, and refused at once:
//     the same value fails every try, so it is tried once.
//   - A duplicate key is judged in input order without the bisecting
//     below, as unique.go says.
//   - What only the server judges (a check or foreign key constraint, a
//     value the checks above let through) shows when a COPY ends. Appends
//     and overwrites stream their batches through a COPY under a
//     savepoint, a window of up to windowBytes; the writer keeps the
//     window's records until the server's verdict. A window the server
//     refuses is rolled back to its savepoint, its duplicate keys refused
//     (unique.go), and the rest written again through sdk.IsolateFunc,
//     split at the line the server names (in halves when it names none),
//     each piece a COPY under a savepoint of its own, the lone refused
//     record retried up to the policy's attempts. Every acknowledged
//     record of the window is written again but the refused ones; nothing
//     unacknowledged is in a window; and a failure that is not a record's
//     fails the session, rolling everything back.
//   - An upsert writes each batch on its own already: sdk.Isolate splits a
//     batch its INSERT refuses, each piece under a savepoint.
//
// The clean path stays a COPY stream: a window costs one savepoint and one
// COPY restart per windowBytes of encoded rows.

// windowBytes bounds the COPY input a window holds before its verdict is
// asked for, and so the memory a session keeps to write it again. A window
// the server refused costs the rows before each refusal written twice, so
// after one the next windows are smaller (down to minWindowBytes), and they
// grow back, doubling, as windows pass clean: sparse refusals stay cheap,
// and a run of them costs a little more per window instead of a whole
// window per refusal.
const (
	windowBytes    = 8 << 20
	minWindowBytes = 64 << 10
)

// isolation is the state of a session that isolates refused records.
type isolation struct {
	// encoded holds the window's COPY lines, encoded in place and sent to
	// the server from there; starts[i] is where line i begins, with the
	// end last.
	encoded []byte
	starts  []int
	// batches holds the window's batches as received (sdk.Batch.Keep:
	// lent, not copied, where the SDK can), keptBytes their size, and
	// refs where each line's record came from and where it is in batches.
	batches   []*sdk.Kept
	keptBytes int
	refs      []recordRef
	// text is a string value's while it is checked; kept, recs and present
	// are a batch's.
	text    []byte
	kept    []int
	recs    [][]byte
	present []bool
	// limit is the current window's size bound (see windowBytes); 0 is
	// windowBytes.
	limit int
	// check holds back and judges duplicate keys (see unique.go);
	// keysTable is set once its table exists.
	check     keyCheck
	keysTable bool
	// gathered holds the lines of a piece of a refused window; sends the
	// parts of a batch's lines that go to the server.
	gathered []byte
	sends    []sendPart
	// early holds a batch encoded while the window before it ends.
	early earlyLines
	// release is set while the last window's savepoint, its COPY taken,
	// waits to be released by the next window's query (or the commit).
	release bool
}

// sendPart is a run of a batch's lines in the window sent as one: encoded
// bytes [from, to), rows lines.
type sendPart struct{ from, to, rows int }

// bound is the size a window may grow to.
func (s *isolation) bound() int {
	if s.limit == 0 {
		return windowBytes
	}
	return s.limit
}

// judged adapts the window size to the verdict on the last one.
func (s *isolation) judged(refused bool) {
	if refused {
		s.limit = max(minWindowBytes, s.bound()/16)
	} else {
		s.limit = min(windowBytes, 2*s.bound())
	}
}

// recordRef is a record's batch and position there, and where its text
// is in the window's batches: batches[batch].Records()[start:end].
type recordRef struct {
	seq                      uint64
	index, batch, start, end int32
}

// reset empties the window, releasing the batches it kept, in order. The
// first one allocates what a full window holds, so a window seldom grows
// by copying itself.
func (s *isolation) reset() {
	if cap(s.encoded) == 0 {
		s.encoded = make([]byte, 0, windowBytes+1<<20)
		s.starts = make([]int, 0, windowBytes/64)
		s.refs = make([]recordRef, 0, windowBytes/64)
	}
	for _, k := range s.batches {
		k.Release()
	}
	clear(s.batches)
	s.encoded, s.batches, s.keptBytes = s.encoded[:0], s.batches[:0], 0
	s.starts, s.refs = append(s.starts[:0], 0), s.refs[:0]
}

// full reports whether the window holds what a window may: encoded lines
// to its bound, or records as received to twice that.
func (s *isolation) full() bool {
	return len(s.encoded) >= s.bound() || s.keptBytes >= 2*s.bound()
}

// add keeps the line just encoded at the end of s.encoded in the window,
// with its record's place.
func (s *isolation) add(ref recordRef) {
	s.starts = append(s.starts, len(s.encoded))
	s.refs = append(s.refs, ref)
}

func (s *isolation) lines() int { return len(s.refs) }

// line is the window's line i, newline included.
func (s *isolation) line(i int) []byte { return s.encoded[s.starts[i]:s.starts[i+1]] }

// record is the window's record i as received.
func (s *isolation) record(i int) []byte {
	r := s.refs[i]
	return s.batches[r.batch].Records()[r.start:r.end]
}

// gather returns the lines listed, in order: a slice of the window when
// they follow one another.
func (s *isolation) gather(lines []int) []byte {
	if len(lines) == 0 {
		return nil
	}
	if first, last := lines[0], lines[len(lines)-1]; last-first == len(lines)-1 {
		return s.encoded[s.starts[first]:s.starts[last+1]]
	}
	s.gathered = s.gathered[:0]
	for _, i := range lines {
		s.gathered = append(s.gathered, s.line(i)...)
	}
	return s.gathered
}

// columnType is what the checks know of a column.
type columnType struct {
	oid     uint32
	typmod  int32
	notNull bool
	// checked is set when checkValue can refuse a value of the column:
	// the others' values are not looked at before they are encoded.
	checked bool
}

// withChecks returns t with checked set as checkValue's cases say.
func (t columnType) withChecks() columnType {
	switch t.oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.NumericOID, pgtype.Float4OID, pgtype.Float8OID, pgtype.BoolOID, pgtype.UUIDOID:
		t.checked = true
	case pgtype.VarcharOID, pgtype.BPCharOID:
		t.checked = t.typmod > 4
	}
	t.checked = t.checked || t.notNull
	return t
}

// writeIsolated writes a batch of a session that isolates refused records.
func (w *writer) writeIsolated(ctx context.Context, b sdk.Batch) error {
	if w.cfg.WriteMode == "upsert" {
		return sdk.Isolate(ctx, b, w.upsertPart)
	}
	cols := w.index.Names()
	ncols := len(cols)
	w.rows = slices.Grow(w.rows[:0], b.Count*ncols)
	present := slices.Grow(w.iso.present[:0], ncols)[:ncols]
	clear(present)
	w.iso.present = present
	// kept are the records that map onto the table: their position in the
	// batch and their text, in the order of w.rows.
	kept, recs := w.iso.kept[:0], w.iso.recs[:0]
	defer func() { w.iso.kept, w.iso.recs = kept, recs[:0] }()
	i := -1
	for rec := range b.All() {
		i++
		start := len(w.rows)
		w.rows = slices.Grow(w.rows, ncols)[:start+ncols]
		vals := w.rows[start:]
		if err := w.index.Row(rec, vals); err != nil {
			sdk.Reject(ctx, b.Seq, i, rec, 1, fmt.Errorf("record %d: %w", i+1, err))
			w.rows = w.rows[:start]
			continue
		}
		kept, recs = append(kept, i), append(recs, rec)
		for c, v := range vals {
			present[c] = present[c] || v != nil
		}
	}
	if len(kept) == 0 {
		return nil
	}
	var listed []string
	var which []int
	for c, p := range present {
		if p {
			listed = append(listed, cols[c])
			which = append(which, c)
		}
	}
	columns := tabular.QuoteList(listed)
	// A full window ends here, not as the batch that filled it is sent:
	// the server takes in that batch while this one is parsed, and
	// encoded, so that the next window's first lines are ready the moment
	// the server has judged the full one.
	var early *earlyLines
	if w.stream != nil && (w.stream.columns != columns || w.iso.full()) {
		early = w.encodeEarly(kept, recs, which)
		if err := w.endWindow(ctx); err != nil {
			return err
		}
		early.reject(ctx, b.Seq)
	}
	fresh := w.stream == nil
	if fresh {
		w.startWindow(ctx, which, columns)
	}
	// The stream's buffers are not used: the lines are encoded into the
	// window and sent from there. Taking one is waiting for the stream to
	// have read all but the last batch sent.
	if _, err := w.stream.buffer(); err != nil {
		// The server ended the window's COPY early: its verdict is in.
		// Once the window is isolated, this batch starts the next one.
		if err := w.endWindow(ctx); err != nil {
			return err
		}
		return w.writeIsolated(ctx, b)
	}
	iso := w.iso
	iso.batches, iso.keptBytes = append(iso.batches, b.Keep()), iso.keptBytes+len(b.Records)
	batch := int32(len(iso.batches) - 1)
	sends := append(iso.sends[:0], sendPart{from: len(iso.encoded)})
	defer func() { iso.sends = sends[:0] }()
	// place keeps the line of kept record k just appended from start on in
	// the window, and sends it unless it repeats an accepted key.
	place := func(k, start int) {
		held := iso.check.repeats(iso.lines(), iso.encoded[start:], iso.line)
		// recs[k] is b.Records from its start on (as Batch.All slices
		// it), so the capacities tell where it is in the batch.
		from := cap(b.Records) - cap(recs[k])
		iso.add(recordRef{seq: b.Seq, index: int32(kept[k]), batch: batch, start: int32(from), end: int32(from + len(recs[k]))})
		if held >= 0 {
			// A duplicate of an accepted record: kept, not sent (see
			// unique.go).
			sends[len(sends)-1].to = start
			sends = append(sends, sendPart{from: len(iso.encoded)})
			return
		}
		sends[len(sends)-1].rows++
	}
	if early != nil {
		for _, l := range early.lines {
			start := len(iso.encoded)
			iso.encoded = append(iso.encoded, early.encoded[l.from:l.to]...)
			if iso.check.keyed() {
				iso.check.starts = fieldStarts(iso.check.starts[:0], iso.encoded[start:])
			}
			iso.check.numOK = false
			place(l.k, start)
		}
	} else {
		for k, index := range kept {
			start := len(iso.encoded)
			var err error
			iso.encoded, err = w.encodeChecked(iso.encoded, w.rows[k*ncols:(k+1)*ncols], which)
			if err != nil {
				iso.encoded = iso.encoded[:start]
				sdk.Reject(ctx, b.Seq, index, recs[k], 1, err)
				continue
			}
			place(k, start)
		}
	}
	sends[len(sends)-1].to = len(iso.encoded)
	// Each part sent takes a buffer, the first the one taken above. A
	// batch the server refused while queued is in the window: ending it
	// writes the batch through isolation.
	for i, part := range sends {
		if i > 0 {
			if _, err := w.stream.buffer(); err != nil {
				return w.endWindow(ctx)
			}
		}
		if err := w.stream.send(b.Seq, part.rows, iso.encoded[part.from:part.to]); err != nil {
			return w.endWindow(ctx)
		}
	}
	if fresh {
		// The server has been idle since the last window's verdict: its
		// first lines go out now, not once this goroutine next waits
		// (see startWindow).
		runtime.Gosched()
	}
	return nil
}

// startWindow begins a window: its savepoint and its COPY, in one query
// behind the release of the last window's savepoint, so that the server
// waits on no round trip between two windows. pgconn sends the COPY's
// lines without waiting for the server to take them; should a statement
// before the COPY fail, the server drops them, and the stream's error is
// that failure.
func (w *writer) startWindow(ctx context.Context, which []int, columns string) {
	w.iso.reset()
	w.iso.check.window(which)
	sql := fmt.Sprintf("SAVEPOINT faucet_window; COPY %s (%s) FROM STDIN", w.name, columns)
	if w.iso.release {
		sql = "RELEASE SAVEPOINT faucet_window; " + sql
		w.iso.release = false
	}
	w.stream = startCopy(ctx, w.conn.PgConn(), sql, columns)
	// A plugin runs on one thread (GOMAXPROCS=1), where the goroutine
	// sending the COPY would otherwise wait until this one blocks, a batch
	// or more later: yielding sends the query while the window's first
	// lines are placed.
	runtime.Gosched()
}

// earlyLines are a batch's lines encoded before the window they go in
// has started, and the records refused meanwhile, reported once the
// window before is judged so that refusals keep their order.
type earlyLines struct {
	encoded []byte
	lines   []earlyLine
	refused []earlyRefusal
}

// earlyLine is kept record k's line: encoded[from:to].
type earlyLine struct{ k, from, to int }

type earlyRefusal struct {
	index  int
	record []byte
	err    error
}

// encodeEarly encodes a batch's kept records for the next window.
func (w *writer) encodeEarly(kept []int, recs [][]byte, which []int) *earlyLines {
	e := &w.iso.early
	e.encoded, e.lines, e.refused = e.encoded[:0], e.lines[:0], e.refused[:0]
	ncols := len(w.index.Names())
	for k, index := range kept {
		start := len(e.encoded)
		var err error
		e.encoded, err = w.encodeChecked(e.encoded, w.rows[k*ncols:(k+1)*ncols], which)
		if err != nil {
			e.encoded = e.encoded[:start]
			e.refused = append(e.refused, earlyRefusal{index: index, record: recs[k], err: err})
			continue
		}
		e.lines = append(e.lines, earlyLine{k: k, from: start, to: len(e.encoded)})
	}
	return e
}

// reject reports the records refused as the batch was encoded early.
func (e *earlyLines) reject(ctx context.Context, seq uint64) {
	for _, r := range e.refused {
		sdk.Reject(ctx, seq, r.index, r.record, 1, r.err)
	}
}

// encodeChecked appends one record's COPY line, or refuses a value its
// column cannot hold. When the window's keys are judged, the offsets of
// the line's fields are left in w.iso.check.starts, as fieldStarts finds
// them.
func (w *writer) encodeChecked(dst []byte, vals [][]byte, which []int) ([]byte, error) {
	line := len(dst)
	check := &w.iso.check
	keyed, starts := check.keyed(), check.starts[:0]
	check.numOK = false
	for j, c := range which {
		if j == check.numField && isInteger(w.types[c].oid) {
			// The key the window judges by its integer value: parsed
			// once, for the check and for the key.
			if n, ok := plainInteger(vals[c]); ok {
				_, lo, hi := integerRange(w.types[c].oid)
				check.num, check.numOK = n, n >= lo && n <= hi
			}
		}
		if !check.numOK || j != check.numField {
			if t := w.types[c]; t.checked {
				if err := checkValue(vals[c], t, &w.iso.text); err != nil {
					return dst, fmt.Errorf("column %s: %w", w.index.Names()[c], err)
				}
			}
		}
		if j > 0 {
			dst = append(dst, '\t')
		}
		if keyed {
			starts = append(starts, len(dst)-line)
		}
		var err error
		if dst, err = w.appendValue(dst, vals[c], c); err != nil {
			return dst, fmt.Errorf("column %s: %w", w.index.Names()[c], err)
		}
	}
	dst = append(dst, '\n')
	if keyed {
		check.starts = append(starts, len(dst)-line)
	}
	return dst, nil
}

// plainInteger parses a raw JSON value that is a bigint as it is spelled in
// a COPY line too: plain digits, optionally signed, bare or in a string
// without escapes. Any other spelling is left to checkValue.
func plainInteger(raw []byte) (int64, bool) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	return parseDecimal(raw)
}

// endWindow ends the window's COPY and, when the server refused it,
// isolates what it refused; the window is then written but the refused
// records. Its savepoint is released by the next window's query, or
// with the commit.
func (w *writer) endWindow(ctx context.Context) error {
	s := w.stream
	w.stream = nil
	close(s.queue)
	<-s.done
	if s.err == nil {
		w.iso.release = true
		w.rejectHeld(ctx)
		w.iso.judged(false)
		w.iso.reset()
		return nil
	}
	refused := recordError(s.err)
	if refused == nil {
		return w.copyFailed(s.err)
	}
	if _, err := w.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT faucet_window"); err != nil {
		return fmt.Errorf("copy into %s: roll back the refused window: %w", w.cfg.Table, classify(err))
	}
	iso := w.iso
	copySQL := fmt.Sprintf("COPY %s (%s) FROM STDIN", w.name, s.columns)
	// The window's own COPY is its first try, its verdict in, unless its
	// keys are judged first: lines are then left out.
	known := !iso.check.keyed()
	pending := make([]int, iso.lines())
	for i := range pending {
		pending[i] = i
	}
	if !known {
		var err error
		if pending, err = w.refuseDuplicates(ctx); err != nil {
			return err
		}
	}
	err := sdk.IsolateFunc(ctx, len(pending),
		func(ctx context.Context, first, n int) error {
			if known {
				known = false
				return refused
			}
			return w.copyPart(ctx, copySQL, iso.gather(pending[first:first+n]))
		},
		func(i, attempts int, err error) {
			line := pending[i]
			ref := iso.refs[line]
			sdk.Reject(ctx, ref.seq, int(ref.index), iso.record(line), attempts, err)
		})
	if err != nil {
		return w.copyFailed(err)
	}
	iso.release = true
	iso.judged(true)
	iso.reset()
	return nil
}

// copyPart copies lines under a savepoint of their own: a refusal leaves
// nothing of them and is a *sdk.RecordError naming the line it was at.
func (w *writer) copyPart(ctx context.Context, copySQL string, lines []byte) error {
	return w.underSavepoint(ctx, func() error {
		_, err := w.conn.PgConn().CopyFrom(ctx, bytes.NewReader(lines), copySQL)
		return classify(err)
	})
}

// upsertPart upserts part of a batch under a savepoint: a record the table
// refuses leaves nothing of the part and is a *sdk.RecordError.
func (w *writer) upsertPart(ctx context.Context, part sdk.Batch) error {
	listed, which, err := w.stage(part)
	if err != nil {
		return err
	}
	ncols := len(w.index.Names())
	for r := 0; r*ncols < len(w.rows); r++ {
		vals := w.rows[r*ncols : (r+1)*ncols]
		for _, c := range which {
			if err := checkValue(vals[c], w.types[c], &w.iso.text); err != nil {
				return &sdk.RecordError{Index: r, Err: fmt.Errorf("column %s: %w", w.index.Names()[c], err)}
			}
		}
	}
	// A COPY into the staging table names the line it refused; the
	// INSERT … SELECT from it does not, and the part is then halved.
	return w.underSavepoint(ctx, func() error { return w.upsert(ctx, part, listed, which) })
}

// underSavepoint runs write under a savepoint of its own: when write fails
// nothing of it stays, and a refusal of a record's content is returned as a
// *sdk.RecordError, any other failure of write as it is.
func (w *writer) underSavepoint(ctx context.Context, write func() error) error {
	if _, err := w.tx.Exec(ctx, "SAVEPOINT faucet_part"); err != nil {
		return classify(err)
	}
	err := write()
	if err == nil {
		_, err = w.tx.Exec(ctx, "RELEASE SAVEPOINT faucet_part")
		return classify(err)
	}
	if _, rerr := w.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT faucet_part"); rerr != nil {
		return classify(rerr)
	}
	if re := recordError(err); re != nil {
		return re
	}
	return err
}

// refusedClasses are the SQLSTATE classes of a record's fault: data
// exceptions (22) and integrity constraint violations (23).
var refusedClasses = []string{"22", "23"}

// copyLine finds the input line a COPY error was at ("COPY t, line 12").
var copyLineOf = regexp.MustCompile(`COPY [^,]+, line (\d+)`)

// recordError is err as a *sdk.RecordError when the server refused a
// record's content, naming the line (from 0) it was at when it says;
// nil for any other failure.
func recordError(err error) *sdk.RecordError {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 || !slices.Contains(refusedClasses, pgErr.Code[:2]) {
		return nil
	}
	msg := pgErr.Message
	if pgErr.Detail != "" {
		msg += " (" + pgErr.Detail + ")"
	}
	re := &sdk.RecordError{Index: -1, Err: fmt.Errorf("%s (SQLSTATE %s)", msg, pgErr.Code)}
	if m := copyLineOf.FindStringSubmatch(pgErr.Where); m != nil {
		if line, err := strconv.Atoi(m[1]); err == nil && line > 0 {
			re.Index = line - 1
		}
	}
	return re
}

// checkValue refuses a raw JSON value its column certainly cannot hold, in
// the server's words. It errs on the side of letting a value through: what
// it lets pass the server judges, at the cost of a window's isolation. buf
// is scratch space for a string's text. It runs for every value of a
// session with a record policy, so the common value (plain digits, a
// string without escapes) is checked in place, in one pass, and a value
// for a column it has no check for (text, a timestamp, JSON) is not read
// at all: a NUL character, which no text column takes and JSON can only
// escape, is refused as the value is encoded (appendString).
func checkValue(raw []byte, t columnType, buf *[]byte) error {
	if len(raw) == 0 || raw[0] == 'n' {
		if t.notNull {
			return errors.New("null value violates the column's not-null constraint")
		}
		return nil
	}
	// text is the value's text, unquoted.
	text := func() ([]byte, error) {
		if raw[0] != '"' {
			return raw, nil
		}
		if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 {
			return raw[1 : len(raw)-1], nil
		}
		s, err := tabular.AppendUnquoted((*buf)[:0], raw)
		*buf = s
		return s, err
	}
	var v []byte
	var err error
	switch t.oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		if v, err = text(); err == nil {
			err = checkInteger(v, t.oid)
		}
	case pgtype.NumericOID, pgtype.Float4OID, pgtype.Float8OID:
		if v, err = text(); err == nil {
			err = checkNumber(v, t.oid)
		}
	case pgtype.BoolOID:
		if v, err = text(); err == nil {
			err = checkBool(v)
		}
	case pgtype.UUIDOID:
		if v, err = text(); err == nil {
			err = checkUUID(v)
		}
	case pgtype.VarcharOID, pgtype.BPCharOID:
		if t.typmod > 4 && raw[0] == '"' {
			if v, err = text(); err == nil {
				err = checkLength(v, t)
			}
		}
	}
	return err
}

// checkLength refuses text longer than its character column's length.
func checkLength(v []byte, t columnType) error {
	n := int(t.typmod) - 4
	if len(v) <= n {
		return nil // no more runes than bytes
	}
	if utf8.RuneCount(bytes.TrimRight(v, " ")) > n {
		name := map[uint32]string{pgtype.VarcharOID: "character varying", pgtype.BPCharOID: "character"}[t.oid]
		return fmt.Errorf("value too long for type %s(%d)", name, n)
	}
	return nil
}

// isInteger reports whether oid is an integer type's.
func isInteger(oid uint32) bool {
	return oid == pgtype.Int2OID || oid == pgtype.Int4OID || oid == pgtype.Int8OID
}

// integerRange is an integer type's name and range.
func integerRange(oid uint32) (name string, lo, hi int64) {
	switch oid {
	case pgtype.Int2OID:
		return "smallint", -1 << 15, 1<<15 - 1
	case pgtype.Int4OID:
		return "integer", -1 << 31, 1<<31 - 1
	}
	return "bigint", -1 << 63, 1<<63 - 1
}

// checkInteger refuses what no integer input is: plain digits out of the
// type's range, or text with a character no integer literal has (a base
// prefix, hex digits and _ are left to the server, whose versions differ).
func checkInteger(s []byte, oid uint32) error {
	name, lo, hi := integerRange(oid)
	n, ok := parseDecimal(s)
	v := s
	if !ok {
		v = bytes.TrimSpace(s)
		n, ok = parseDecimal(v)
	}
	if ok {
		if n < lo || n > hi {
			return fmt.Errorf("value %q is out of range for type %s", s, name)
		}
		return nil
	}
	if len(v) == 0 || len(bytes.Trim(v, "+-0123456789_xXoObBaAcCdDeEfF")) > 0 {
		return fmt.Errorf("invalid input syntax for type %s: %q", name, s)
	}
	if len(bytes.Trim(v, "+-0123456789")) == 0 {
		return fmt.Errorf("value %q is out of range for type %s", s, name)
	}
	return nil
}

// parseDecimal parses an optionally signed run of decimal digits that fits
// an int64.
func parseDecimal(v []byte) (int64, bool) {
	neg := false
	if len(v) > 0 && (v[0] == '+' || v[0] == '-') {
		neg, v = v[0] == '-', v[1:]
	}
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// checkNumber refuses text with a character no numeric literal has (NaN
// and Infinity spelled in any case are numbers).
func checkNumber(s []byte, oid uint32) error {
	if plainNumber(s) {
		return nil
	}
	v := bytes.TrimSpace(s)
	if plainNumber(v) {
		return nil
	}
	if _, err := strconv.ParseFloat(string(v), 64); err == nil {
		return nil
	}
	if len(v) == 0 || len(bytes.Trim(v, "+-.0123456789eE_ nNaAiIfFtTyY")) > 0 {
		name := map[uint32]string{pgtype.NumericOID: "numeric", pgtype.Float4OID: "real", pgtype.Float8OID: "double precision"}[oid]
		return fmt.Errorf("invalid input syntax for type %s: %q", name, s)
	}
	return nil
}

// plainNumber reports whether v is [+-]digits[.digits], the common number.
func plainNumber(v []byte) bool {
	if len(v) > 0 && (v[0] == '+' || v[0] == '-') {
		v = v[1:]
	}
	digits, dot := 0, false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// boolWords are the inputs a boolean column takes, and their unambiguous
// prefixes.
var boolWords = map[string]bool{
	"t": true, "tr": true, "tru": true, "true": true, "y": true, "ye": true, "yes": true, "on": true, "1": true,
	"f": true, "fa": true, "fal": true, "fals": true, "false": true, "n": true, "no": true, "of": true, "off": true, "0": true,
}

func checkBool(s []byte) error {
	switch string(s) { // no allocation: the compiler compares in place
	case "true", "false", "t", "f", "1", "0":
		return nil
	}
	v := bytes.TrimSpace(s)
	if len(v) > 5 || !boolWords[strings.ToLower(string(v))] {
		return fmt.Errorf("invalid input syntax for type boolean: %q", s)
	}
	return nil
}

// checkUUID refuses text that is not 32 hex digits once hyphens and braces
// are dropped.
func checkUUID(s []byte) error {
	n := 0
	for _, c := range bytes.TrimSpace(s) {
		switch {
		case c == '-' || c == '{' || c == '}':
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			n++
		default:
			return fmt.Errorf("invalid input syntax for type uuid: %q", s)
		}
	}
	if n != 32 {
		return fmt.Errorf("invalid input syntax for type uuid: %q", s)
	}
	return nil
}
