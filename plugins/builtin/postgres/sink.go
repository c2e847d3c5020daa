package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

type sinkConfig struct {
	URL string `json:"url"`
	tabular.Sink
}

func decodeSink(config json.RawMessage) (sinkConfig, error) {
	var cfg sinkConfig
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.Normalize()
}

// stage is the temporary table an upsert copies each batch into; it is
// dropped with the transaction.
const stage = "faucet_stage"

// stageSeq orders the staged rows so the last record of a key wins.
const stageSeq = "faucet_stage_seq"

// Open connects and starts the session's transaction. An existing table is
// described and locked for writing inside it, and for overwrite its rows are
// deleted (readers keep seeing them until the commit); a missing one waits
// for the first batch, which shows its columns (see create).
func (Connector) Open(ctx context.Context, config json.RawMessage) (sdk.Writer, error) {
	cfg, err := decodeSink(config)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, cfg.URL)
	if err != nil {
		return nil, err
	}
	w := &writer{cfg: cfg, conn: conn, name: quoteTable(cfg.Table)}
	if _, ok := sdk.RecordPolicyFrom(ctx); ok {
		w.iso = &isolation{}
	}
	if err := w.begin(ctx); err != nil {
		// The cause matters more than a failure to roll back.
		_ = w.Abort(context.WithoutCancel(ctx))
		return nil, err
	}
	if w.index == nil {
		// Nothing to hold a transaction open for until the table exists.
		if err := w.tx.Rollback(ctx); err != nil {
			_ = w.Abort(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("roll back: %w", classify(err))
		}
		w.tx = nil
	}
	return w, nil
}

type writer struct {
	cfg  sinkConfig
	conn *pgx.Conn
	// tx is the session's transaction; nil while the table does not exist.
	tx   pgx.Tx
	name string // the quoted table name
	// created is set when this session created the table.
	created bool
	index   *tabular.ColumnIndex
	json    []bool // the column holds json or jsonb: copy values as JSON text
	// types describe the columns for the values isolation checks.
	types []columnType
	// iso, in a session with a record policy, isolates the records the
	// table refuses (see isolate.go); nil otherwise.
	iso *isolation
	// rows holds the batch being written, one raw value per column per
	// record, reused from batch to batch.
	rows    [][]byte
	present []bool
	// stream is the COPY in progress (appends and overwrites).
	stream *copyStream
	// buf holds an upsert's encoded batch.
	buf []byte
}

// begin starts the session's transaction and, when the table exists, sets
// up writing to it; w.index stays nil when it does not.
func (w *writer) begin(ctx context.Context) error {
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", classify(err))
	}
	w.tx = tx
	var names []string
	var isJSON []bool
	var types []columnType
	rows, err := w.tx.Query(ctx, `SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, w.name)
	if err != nil {
		return fmt.Errorf("describe table %s: %w", w.cfg.Table, classify(err))
	}
	for rows.Next() {
		var n string
		var t columnType
		if err := rows.Scan(&n, &t.oid, &t.typmod, &t.notNull); err != nil {
			rows.Close()
			return fmt.Errorf("describe table %s: %w", w.cfg.Table, err)
		}
		names = append(names, n)
		isJSON = append(isJSON, t.oid == pgtype.JSONOID || t.oid == pgtype.JSONBOID)
		types = append(types, t.withChecks())
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("describe table %s: %w", w.cfg.Table, classify(err))
	}
	if len(names) == 0 {
		return nil
	}
	// Held to the end of the session, the lock keeps a session that created
	// the table from dropping it under this one (see dropUnused).
	if _, err := w.tx.Exec(ctx, "LOCK TABLE "+w.name+" IN ROW EXCLUSIVE MODE"); err != nil {
		return fmt.Errorf("lock table %s: %w", w.cfg.Table, classify(err))
	}
	if w.cfg.WriteMode == "overwrite" {
		if _, err := w.tx.Exec(ctx, "DELETE FROM "+w.name); err != nil {
			return fmt.Errorf("empty table %s: %w", w.cfg.Table, classify(err))
		}
	}
	if w.cfg.WriteMode == "upsert" {
		if err := w.checkUnique(ctx); err != nil {
			return err
		}
	}
	w.types = types
	if err := w.use(ctx, names, isJSON); err != nil {
		return err
	}
	if w.iso != nil && w.cfg.WriteMode != "upsert" {
		keys, err := w.readUniqueKeys(ctx)
		if err != nil {
			return err
		}
		w.iso.check.keys = keys
	}
	return nil
}

// checkUnique makes sure ON CONFLICT (key) has a unique index to act on,
// so a misconfigured upsert fails before any data moves.
func (w *writer) checkUnique(ctx context.Context) error {
	rows, err := w.tx.Query(ctx, `SELECT ARRAY(SELECT a.attname::text FROM pg_attribute a
			WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey[0:i.indnkeyatts - 1]) ORDER BY a.attname)
		FROM pg_index i WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL`, w.name)
	if err != nil {
		return fmt.Errorf("read unique indexes of %s: %w", w.cfg.Table, classify(err))
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[[]string])
	if err != nil {
		return fmt.Errorf("read unique indexes of %s: %w", w.cfg.Table, classify(err))
	}
	key := slices.Sorted(slices.Values(w.cfg.Key))
	for _, cols := range indexes {
		if slices.Equal(cols, key) {
			return nil
		}
	}
	return fmt.Errorf("upsert into %s needs a primary key or unique index on exactly (%s)", w.cfg.Table, strings.Join(w.cfg.Key, ", "))
}

// use sets up writing to a table with the given columns.
func (w *writer) use(ctx context.Context, names []string, isJSON []bool) error {
	w.index = tabular.NewColumnIndex(w.cfg.Table, names)
	w.json = isJSON
	if err := w.index.CheckKey(w.cfg.Key); err != nil {
		return err
	}
	if w.cfg.WriteMode == "upsert" {
		ddl := fmt.Sprintf("CREATE TEMP TABLE %s (LIKE %s INCLUDING DEFAULTS, %s bigint GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP", stage, w.name, stageSeq)
		if _, err := w.tx.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("create staging table: %w", classify(err))
		}
	}
	return nil
}

// create makes the table from the columns the first batch shows (bigint,
// numeric, boolean, timestamptz, text and jsonb) in a transaction of its
// own, committed at once, and then begins the session on it. The shards of
// a run writing one new table in parallel thus share it: an advisory lock
// lets one of them create it and the others find it, where a table created
// inside each session would keep every other shard waiting for the first
// one's commit. A session that fails drops the table it created while the
// table is empty and unused (see dropUnused).
func (w *writer) create(ctx context.Context, b sdk.Batch) error {
	t, err := tabular.CreateTable(w.cfg.Table, b.All(), w.cfg.Key, sqlType)
	if err != nil {
		return err
	}
	// The lock is the session's, taken before the transaction: a
	// transaction begun after another session's CREATE committed sees the
	// table, where one already waiting on a lock may not.
	lockKey := "faucet create table " + w.name
	if _, err := w.conn.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", lockKey); err != nil {
		return fmt.Errorf("create table %s: %w", w.cfg.Table, classify(err))
	}
	err = pgx.BeginFunc(ctx, w.conn, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", w.name).Scan(&exists); err != nil || exists {
			return err
		}
		_, err := tx.Exec(ctx, t.DDL)
		w.created = err == nil
		return err
	})
	if _, uerr := w.conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", lockKey); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", w.cfg.Table, classify(err))
	}
	if err := w.begin(ctx); err != nil {
		return err
	}
	if w.index == nil {
		return fmt.Errorf("table %s was dropped as it was being created", w.cfg.Table)
	}
	return nil
}

func sqlType(k tabular.Kind) string {
	switch k {
	case tabular.KindBool:
		return "boolean"
	case tabular.KindInteger:
		return "bigint"
	case tabular.KindNumber:
		return "numeric"
	case tabular.KindTime:
		return "timestamptz"
	case tabular.KindJSON:
		return "jsonb"
	default:
		return "text"
	}
}

// Write copies the batch into the table (or, for upsert, into the staging
// table and from there with INSERT … ON CONFLICT). Only the columns some
// record of the batch has are listed, so the others get their defaults.
// Appends and overwrites stream consecutive batches with the same columns
// through one COPY (see copyStream); an upsert copies each batch on its
// own, as its INSERT must see the batch whole.
func (w *writer) Write(ctx context.Context, b sdk.Batch) error {
	if w.index == nil {
		if err := w.create(ctx, b); err != nil {
			return err
		}
	}
	if w.iso != nil {
		return w.writeIsolated(ctx, b)
	}
	listed, which, err := w.stage(b)
	if err != nil {
		return err
	}
	if w.cfg.WriteMode == "upsert" {
		return w.upsert(ctx, b, listed, which)
	}
	buf, err := w.copyBuffer(ctx, listed)
	if err != nil {
		return err
	}
	if buf, err = w.encode(buf, which); err != nil {
		w.stream.free <- buf[:0]
		return err
	}
	return w.send(b, buf)
}

// stage splits the batch's records into w.rows, one raw value per column,
// and returns the columns some record has (listed by name, which by
// position), in table order.
func (w *writer) stage(b sdk.Batch) (listed []string, which []int, err error) {
	cols := w.index.Names()
	ncols := len(cols)
	w.rows = slices.Grow(w.rows[:0], b.Count*ncols)
	w.present = make([]bool, ncols)
	n := 0
	for rec := range b.All() {
		n++
		start := len(w.rows)
		if start+ncols > cap(w.rows) {
			w.rows = slices.Grow(w.rows, ncols)
		}
		w.rows = w.rows[:start+ncols]
		vals := w.rows[start:]
		if err := w.index.Row(rec, vals); err != nil {
			return nil, nil, &sdk.RecordError{Index: n - 1, Err: fmt.Errorf("record %d: %w", n, err)}
		}
		for i, v := range vals {
			if v != nil {
				w.present[i] = true
			}
		}
	}
	for i, p := range w.present {
		if p {
			listed = append(listed, cols[i])
			which = append(which, i)
		}
	}
	if len(listed) == 0 {
		return nil, nil, fmt.Errorf("batch %d: no record has a column of table %s", b.Seq, w.cfg.Table)
	}
	return listed, which, nil
}

// copyBuffer returns a buffer to encode a batch into for the COPY listing
// names, starting that COPY when the one in progress lists others.
func (w *writer) copyBuffer(ctx context.Context, names []string) ([]byte, error) {
	columns := tabular.QuoteList(names)
	if w.stream != nil && w.stream.columns != columns {
		if err := w.endCopy(); err != nil {
			return nil, err
		}
	}
	if w.stream == nil {
		w.stream = startCopy(ctx, w.conn.PgConn(), fmt.Sprintf("COPY %s (%s) FROM STDIN", w.name, columns), columns)
	}
	buf, err := w.stream.buffer()
	if err != nil {
		return nil, w.copyFailed(err)
	}
	return buf, nil
}

// send queues a batch's encoded rows on the COPY in progress.
func (w *writer) send(b sdk.Batch, rows []byte) error {
	if err := w.stream.send(b.Seq, b.Count, rows); err != nil {
		return w.copyFailed(err)
	}
	return nil
}

// endCopy finishes the COPY in progress and reports the server's verdict.
func (w *writer) endCopy() error {
	s := w.stream
	w.stream = nil
	if err := s.finish(); err != nil {
		return w.copyFailed(err)
	}
	return nil
}

func (w *writer) copyFailed(err error) error {
	return fmt.Errorf("copy into %s: %w", w.cfg.Table, classify(err))
}

// upsert copies one batch into the staging table and merges it into the
// table, the last record of a key winning.
func (w *writer) upsert(ctx context.Context, b sdk.Batch, listed []string, which []int) error {
	for _, k := range w.cfg.Key {
		if !slices.Contains(listed, k) {
			return fmt.Errorf("batch %d: no record has key column %q", b.Seq, k)
		}
	}
	var err error
	if w.buf, err = w.encode(w.buf[:0], which); err != nil {
		return err
	}
	copySQL := fmt.Sprintf("COPY %s (%s) FROM STDIN", stage, tabular.QuoteList(listed))
	if _, err := w.conn.PgConn().CopyFrom(ctx, bytes.NewReader(w.buf), copySQL); err != nil {
		return w.copyFailed(err)
	}
	action := "NOTHING"
	if set := tabular.UpsertSet(listed, w.cfg.Key); set != "" {
		action = "UPDATE SET " + set
	}
	key := tabular.QuoteList(w.cfg.Key)
	upsert := fmt.Sprintf("INSERT INTO %s (%s) SELECT DISTINCT ON (%s) %s FROM %s ORDER BY %s, %s DESC ON CONFLICT (%s) DO %s",
		w.name, tabular.QuoteList(listed), key, tabular.QuoteList(listed), stage, key, stageSeq, key, action)
	if _, err := w.tx.Exec(ctx, upsert); err != nil {
		return fmt.Errorf("upsert into %s: %w", w.cfg.Table, classify(err))
	}
	if _, err := w.tx.Exec(ctx, "TRUNCATE "+stage); err != nil {
		return fmt.Errorf("clear staging table: %w", classify(err))
	}
	return nil
}

// encode appends the staged rows to dst in COPY's text format:
// tab-separated columns, each value as appendValue writes it.
func (w *writer) encode(dst []byte, which []int) ([]byte, error) {
	ncols := len(w.index.Names())
	for r := 0; r+ncols <= len(w.rows); r += ncols {
		vals := w.rows[r : r+ncols]
		for j, i := range which {
			if j > 0 {
				dst = append(dst, '\t')
			}
			var err error
			if dst, err = w.appendValue(dst, vals[i], i); err != nil {
				return dst, fmt.Errorf("record %d, column %s: %w", r/ncols+1, w.index.Names()[i], err)
			}
		}
		dst = append(dst, '\n')
	}
	return dst, nil
}

// appendValue appends a record's raw JSON value for column col in COPY's
// text format: \N for NULL (or a missing value), backslash escapes for
// tabs, newlines and backslashes. JSON numbers and booleans are valid
// input as they are; strings are unquoted; objects and arrays (and
// anything bound for a json column) go as JSON text.
func (w *writer) appendValue(dst, raw []byte, col int) ([]byte, error) {
	switch {
	case len(raw) == 0 || raw[0] == 'n':
		return append(dst, `\N`...), nil
	case w.json[col] || raw[0] == '{' || raw[0] == '[':
		return appendEscaped(dst, raw), nil
	case raw[0] == '"':
		return appendString(dst, raw)
	}
	return append(dst, raw...), nil
}

// copySpecial marks the bytes COPY's text format escapes.
var copySpecial = [256]bool{'\\': true, '\n': true, '\r': true, '\t': true}

// appendString appends the text of a raw JSON string in COPY's format,
// decoding JSON's escapes and applying COPY's in one pass. The common
// string, without escapes, goes through as it is. A NUL character, which
// the server refuses in any text, is refused here.
func appendString(dst, raw []byte) ([]byte, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return dst, errors.New("not a JSON string")
	}
	s := raw[1 : len(raw)-1]
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !copySpecial[c] {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		if c != '\\' {
			// A control character a lenient producer left unescaped.
			dst = appendEscaped(dst, s[i:i+1])
			continue
		}
		if i+1 == len(s) {
			return dst, errors.New("malformed JSON string: it ends in a backslash")
		}
		i++
		switch e := s[i]; e {
		case '"', '/':
			dst = append(dst, e)
		case '\\':
			dst = append(dst, '\\', '\\')
		case 'n', 'r', 't':
			// COPY's text format has the same escapes for these.
			dst = append(dst, '\\', e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			r, n, err := decodeUnicodeEscape(s[i-1:])
			if err != nil {
				return dst, err
			}
			if r == 0 {
				// The server would refuse it: no text column takes one.
				return dst, errors.New(`invalid byte sequence for encoding "UTF8": 0x00`)
			}
			i += n - 2
			var buf [utf8.UTFMax]byte
			dst = appendEscaped(dst, utf8.AppendRune(buf[:0], r))
		default:
			return dst, fmt.Errorf("malformed JSON string: unknown escape \\%c", e)
		}
		start = i + 1
	}
	return append(dst, s[start:]...), nil
}

// decodeUnicodeEscape decodes the \uXXXX escape at the start of s, with
// the low half of a surrogate pair following it, and returns the rune and
// the bytes used. A lone surrogate becomes U+FFFD, as encoding/json does.
func decodeUnicodeEscape(s []byte) (rune, int, error) {
	hex4 := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0, errors.New("malformed JSON string: bad \\u escape")
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if lo, ok := hex4(s[6:]); ok {
		if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
			return dec, 12, nil
		}
	}
	return utf8.RuneError, 6, nil
}

// appendEscaped appends b with COPY text-format escapes.
func appendEscaped(dst, b []byte) []byte {
	start := 0
	for i, c := range b {
		if !copySpecial[c] {
			continue
		}
		dst = append(dst, b[start:i]...)
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		}
		start = i + 1
	}
	return append(dst, b[start:]...)
}

// Close ends the COPY in progress and commits every acknowledged batch; if
// the server rejects any of them, nothing is committed (unless a record
// policy isolates the records it rejects).
func (w *writer) Close(ctx context.Context) error {
	if w.tx == nil {
		// No batch arrived, so there is no table to commit to.
		w.conn.Close(context.WithoutCancel(ctx))
		return nil
	}
	if w.stream != nil && w.iso != nil {
		if err := w.endWindow(ctx); err != nil {
			w.discard(context.WithoutCancel(ctx))
			return err
		}
	}
	if w.stream != nil {
		if err := w.endCopy(); err != nil {
			w.discard(context.WithoutCancel(ctx))
			return err
		}
	}
	if err := w.tx.Commit(ctx); err != nil {
		w.discard(context.WithoutCancel(ctx))
		return fmt.Errorf("commit: %w", classify(err))
	}
	w.conn.Close(context.WithoutCancel(ctx))
	return nil
}

// Abort rolls the session back.
func (w *writer) Abort(ctx context.Context) error {
	if w.stream != nil {
		w.stream.cancel()
		w.stream = nil
	}
	var err error
	if w.tx != nil {
		if rerr := w.tx.Rollback(ctx); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			err = fmt.Errorf("roll back: %w", rerr)
		}
	}
	w.dropUnused(ctx)
	w.conn.Close(context.WithoutCancel(ctx))
	return err
}

// discard ends a session whose commit failed: rolled back, the table it
// created dropped if nothing else uses it, the connection closed.
func (w *writer) discard(ctx context.Context) {
	_ = w.tx.Rollback(ctx)
	w.dropUnused(ctx)
	w.conn.Close(ctx)
}

// dropUnused drops the table this session created, so that a failed session
// leaves the database as it was, unless the table holds rows or another
// session (a shard of the same run) has it open: then it stays, theirs. It
// is best effort; a session whose connection died leaves the empty table.
func (w *writer) dropUnused(ctx context.Context) {
	if !w.created {
		return
	}
	_ = pgx.BeginFunc(ctx, w.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE "+w.name+" IN ACCESS EXCLUSIVE MODE NOWAIT"); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+w.name+")").Scan(&used); err != nil || used {
			return err
		}
		_, err := tx.Exec(ctx, "DROP TABLE "+w.name)
		return err
	})
}
