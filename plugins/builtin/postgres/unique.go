package postgres

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Duplicate keys, in a session that isolates refused records. A unique
// violation is the server's verdict, found as a window's COPY ends; left to
// the bisecting isolation below it, a duplicate every thousand rows had
// nearly every window refused and rewritten in pieces. Two checks keep
// duplicates off that path, both judging in input order, so that of the
// records sharing a key the first one the table can take is written and
// every later one is refused:
//
//   - As a window is encoded, a record whose key (on some unique index of
//     plain columns) is spelled exactly as an accepted record's of the same
//     window (or, for one integer column, has the same value) is held back
//     from the COPY: the same input text is the same value to the server,
//     so it would be refused. Held records are refused
//     once the window's COPY is through; when the window is refused, they
//     are judged with the rest of it, as the record they repeat may be the
//     one the table refused.
//   - A window the server refused anyway (a key spelled differently, a key
//     of a row already in the table or of an earlier window) has its keys
//     copied into a temporary table and joined against the table and
//     against themselves: the records the table would refuse for a key are
//     refused outright, and only the rest go through savepoint isolation,
//     where a check or foreign key violation still ends up.
//
// A duplicate fails every try, so it is refused after one. Partial and
// expression indexes are left to the server, and so to isolation.

// keysTable holds a refused window's keys while they are judged; it is
// dropped with the transaction.
const keysTable = "faucet_keys"

// keysLine is keysTable's column for a key's line in the window.
const keysLine = "faucet_line"

// uniqueKey is a unique index of the table on plain columns without a
// predicate: one that two records' values alone can violate.
type uniqueKey struct {
	name string // the index's, which the server names as the constraint
	cols []int  // its columns, by position in the table
	// integer is set for a key of one integer column.
	integer bool
}

// readUniqueKeys lists the table's unique keys, the primary key first.
func (w *writer) readUniqueKeys(ctx context.Context) ([]uniqueKey, error) {
	rows, err := w.tx.Query(ctx, `SELECT c.relname::text, ARRAY(SELECT a.attname::text
			FROM unnest(i.indkey[0:i.indnkeyatts - 1]::int2[]) WITH ORDINALITY AS k(attnum, n)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
		ORDER BY i.indisprimary DESC, c.relname`, w.name)
	if err != nil {
		return nil, fmt.Errorf("read unique indexes of %s: %w", w.cfg.Table, classify(err))
	}
	position := map[string]int{}
	for i, n := range w.index.Names() {
		position[n] = i
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (uniqueKey, error) {
		var k uniqueKey
		var names []string
		if err := row.Scan(&k.name, &names); err != nil {
			return k, err
		}
		for _, n := range names {
			k.cols = append(k.cols, position[n])
		}
		k.integer = len(k.cols) == 1 && isInteger(w.types[k.cols[0]].oid)
		return k, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read unique indexes of %s: %w", w.cfg.Table, classify(err))
	}
	return keys, nil
}

// keyCheck is a window's state for the checks above.
type keyCheck struct {
	keys []uniqueKey
	// fields[k] are key k's columns as field numbers of the window's COPY
	// lines; nil when the window does not list all of them.
	fields [][]int
	anyKey bool
	// seen[k] holds the accepted lines by the hash of their key k, or
	// ordered[k] in order (see orderedKey).
	seen    []keySet
	ordered []orderedKey
	// held are the lines held back from the COPY, and by which key.
	held []heldLine
	hash maphash.Hash
	seed maphash.Seed
	// starts and other are scratch space for lines' field offsets.
	starts, other []int
	// numField is the field of the first key of one integer column,
	// -1 for none; num is its value on the line just encoded, when numOK
	// (encodeChecked parses it as it checks it).
	numField int
	num      int64
	numOK    bool
}

type heldLine struct{ line, key int }

// window starts a window whose lines list the table's columns which.
func (c *keyCheck) window(which []int) {
	c.fields, c.held, c.anyKey = c.fields[:0], c.held[:0], false
	c.numField, c.numOK = -1, false
	if len(c.seen) == 0 {
		c.seed = maphash.MakeSeed()
		c.hash.SetSeed(c.seed)
	}
	for len(c.seen) < len(c.keys) {
		c.seen, c.ordered = append(c.seen, keySet{}), append(c.ordered, orderedKey{})
	}
	for k, key := range c.keys {
		c.seen[k].reset()
		o := &c.ordered[k]
		o.on, o.vals, o.lines = key.integer, o.vals[:0], o.lines[:0]
		var fields []int
		for _, col := range key.cols {
			f := slices.Index(which, col)
			if f < 0 {
				fields = nil
				break
			}
			fields = append(fields, f)
		}
		c.fields = append(c.fields, fields)
		c.anyKey = c.anyKey || fields != nil
		if key.integer && fields != nil && c.numField < 0 {
			c.numField = fields[0]
		}
	}
}

// keyed reports whether the window lists some key's every column.
func (c *keyCheck) keyed() bool { return c.anyKey }

// fieldStarts appends the offset of each field of a COPY line (ending in a
// newline) and its length: field f is line[s[f]:s[f+1]-1]. A tab in a
// value is escaped, so every tab byte separates fields.
func fieldStarts(dst []int, line []byte) []int {
	dst = append(dst, 0)
	for i, b := range line {
		if b == '\t' {
			dst = append(dst, i+1)
		}
	}
	return append(dst, len(line))
}

func field(line []byte, starts []int, f int) []byte { return line[starts[f] : starts[f+1]-1] }

// repeats judges line n of the window, before it is sent, c.starts
// holding its field offsets: the key it repeats of an accepted line (the
// line is then held back), or -1, and the line's keys are then recorded as
// accepted. lineAt returns an earlier line.
func (c *keyCheck) repeats(n int, line []byte, lineAt func(int) []byte) int {
	if !c.keyed() {
		return -1
	}
	// sums[k] is the hash of the line's key k, or ascending[k] set when
	// the key comes after every accepted one, its value vals[k]; neither
	// for a key the line does not have.
	var sumsAt [8]uint64
	var valsAt [8]int64
	var ascendingAt [8]bool
	sums, vals, ascending := sumsAt[:0], valsAt[:0], ascendingAt[:0]
	for k, fields := range c.fields {
		sums, vals, ascending = append(sums, 0), append(vals, 0), append(ascending, false)
		if fields == nil || c.null(line, c.starts, fields) {
			continue
		}
		if o := &c.ordered[k]; o.on {
			v, ok := c.num, c.numOK && fields[0] == c.numField
			if !ok {
				v, ok = parseDecimal(field(line, c.starts, fields[0]))
			}
			if ok && (len(o.vals) == 0 || v > o.vals[len(o.vals)-1]) {
				vals[k], ascending[k] = v, true
				continue
			}
			if _, found := slices.BinarySearch(o.vals, v); ok && found {
				c.held = append(c.held, heldLine{line: n, key: k})
				return k
			}
			c.unorder(k, lineAt)
		}
		sums[k] = c.keyHash(line, c.starts, fields)
		set := &c.seen[k]
		for i := set.first(sums[k]); set.hashes[i] != 0; i = set.next(i) {
			if set.hashes[i] == sums[k] && c.sameKey(line, lineAt(int(set.lines[i])), fields) {
				c.held = append(c.held, heldLine{line: n, key: k})
				return k
			}
		}
	}
	for k := range sums {
		switch {
		case ascending[k]:
			c.ordered[k].vals = append(c.ordered[k].vals, vals[k])
			c.ordered[k].lines = append(c.ordered[k].lines, int32(n))
		case sums[k] != 0:
			c.seen[k].add(sums[k], n)
		}
	}
	return -1
}

// orderedKey is how a window judges a key of one integer column while
// its values come in ascending order, as generated ids do: the accepted
// values, and their lines, in order, a repeat found by binary search
// without the hashing and the random reads of keySet. The first value out
// of order (or not plain digits) moves them into the key's set.
type orderedKey struct {
	on    bool
	vals  []int64
	lines []int32
}

// unorder moves key k's accepted lines from its ordered list into its set.
func (c *keyCheck) unorder(k int, lineAt func(int) []byte) {
	o := &c.ordered[k]
	o.on = false
	for _, n := range o.lines {
		line := lineAt(int(n))
		c.other = fieldStarts(c.other[:0], line)
		c.seen[k].add(c.keyHash(line, c.other, c.fields[k]), int(n))
	}
	o.vals, o.lines = o.vals[:0], o.lines[:0]
}

// null reports whether a value of a key is null, which no unique index
// compares.
func (c *keyCheck) null(line []byte, starts, fields []int) bool {
	for _, f := range fields {
		if bytes.Equal(field(line, starts, f), nullField) {
			return true
		}
	}
	return false
}

var nullField = []byte(`\N`)

// keyHash hashes a line's key fields, never to 0.
func (c *keyCheck) keyHash(line []byte, starts, fields []int) uint64 {
	var sum uint64
	if len(fields) == 1 {
		sum = maphash.Bytes(c.seed, field(line, starts, fields[0]))
	} else {
		c.hash.Reset()
		for _, f := range fields {
			c.hash.Write(field(line, starts, f))
			c.hash.WriteByte(0)
		}
		sum = c.hash.Sum64()
	}
	return max(sum, 1)
}

// sameKey reports whether an earlier line spells the key fields as line
// does (c.starts holds line's offsets): a hash collision is not a
// duplicate.
func (c *keyCheck) sameKey(line, earlier []byte, fields []int) bool {
	c.other = fieldStarts(c.other[:0], earlier)
	for _, f := range fields {
		if !bytes.Equal(field(line, c.starts, f), field(earlier, c.other, f)) {
			return false
		}
	}
	return true
}

// keySet holds lines by the hash of a key, by open addressing: the one
// lookup every line of a window costs is cheaper than a map's.
type keySet struct {
	hashes []uint64 // 0 is a free slot
	lines  []int32
	n      int
}

// reset empties the set, keeping its room.
func (s *keySet) reset() {
	if len(s.hashes) == 0 {
		s.hashes, s.lines = make([]uint64, 1<<12), make([]int32, 1<<12)
	}
	clear(s.hashes)
	s.n = 0
}

// first is the slot a lookup of hash h starts at; next the one after i.
// A lookup ends at a free slot.
func (s *keySet) first(h uint64) int { return int(h) & (len(s.hashes) - 1) }
func (s *keySet) next(i int) int     { return (i + 1) & (len(s.hashes) - 1) }

// add records line under hash h (not 0), keeping at least half the slots
// free.
func (s *keySet) add(h uint64, line int) {
	if 2*(s.n+1) > len(s.hashes) {
		old, lines := s.hashes, s.lines
		s.hashes, s.lines, s.n = make([]uint64, 2*len(old)), make([]int32, 2*len(old)), 0
		for i, h := range old {
			if h != 0 {
				s.add(h, int(lines[i]))
			}
		}
	}
	i := s.first(h)
	for s.hashes[i] != 0 {
		i = s.next(i)
	}
	s.hashes[i], s.lines[i] = h, int32(line)
	s.n++
}

// duplicate is the refusal of a record whose key k the table already
// holds, in the server's words.
func (c *keyCheck) duplicate(names []string, k int, line []byte) error {
	starts := fieldStarts(nil, line)
	cols, vals := make([]string, 0, len(c.fields[k])), make([]string, 0, len(c.fields[k]))
	for i, f := range c.fields[k] {
		cols = append(cols, names[c.keys[k].cols[i]])
		vals = append(vals, string(field(line, starts, f)))
	}
	return fmt.Errorf(`duplicate key value violates unique constraint "%s" (Key (%s)=(%s) already exists.) (SQLSTATE 23505)`,
		c.keys[k].name, strings.Join(cols, ", "), strings.Join(vals, ", "))
}

// rejectHeld refuses the lines held back from a window the server took.
func (w *writer) rejectHeld(ctx context.Context) {
	iso := w.iso
	for _, h := range iso.check.held {
		ref := iso.refs[h.line]
		sdk.Reject(ctx, ref.seq, int(ref.index), iso.record(h.line), 1, iso.check.duplicate(w.index.Names(), h.key, iso.line(h.line)))
	}
}

// keyConflict is a line of a refused window whose key the table or
// another line of the window holds: first is the first line of the window
// with that key, -1 for a row of the table.
type keyConflict struct{ line, key, first int }

// refuseDuplicates judges the keys of a refused window, rolled back to its
// savepoint, against the table and in input order: it refuses the lines
// the table would refuse for a key and returns the others. When the keys
// themselves are refused (a value the server would not take), it refuses
// none and the window is isolated as a whole.
func (w *writer) refuseDuplicates(ctx context.Context) ([]int, error) {
	iso, c := w.iso, &w.iso.check
	all := make([]int, iso.lines())
	for i := range all {
		all[i] = i
	}
	if err := w.createKeysTable(ctx); err != nil {
		return nil, err
	}
	// The columns the window lists of the keys it has, and their fields.
	var names []string
	var fields []int
	for k, fs := range c.fields {
		for i, f := range fs {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
				names = append(names, w.index.Names()[c.keys[k].cols[i]])
			}
		}
	}
	var copied []byte
	for i := range all {
		line := iso.line(i)
		c.starts = fieldStarts(c.starts[:0], line)
		copied = fmt.Appendf(copied, "%d", i)
		for _, f := range fields {
			copied = append(copied, '\t')
			copied = append(copied, field(line, c.starts, f)...)
		}
		copied = append(copied, '\n')
	}
	var found []keyConflict
	err := w.underSavepoint(ctx, func() error {
		copySQL := fmt.Sprintf("COPY %s (%s, %s) FROM STDIN", keysTable, keysLine, tabular.QuoteList(names))
		if _, err := w.conn.PgConn().CopyFrom(ctx, bytes.NewReader(copied), copySQL); err != nil {
			return err
		}
		rows, err := w.tx.Query(ctx, w.conflictsQuery())
		if err != nil {
			return err
		}
		found, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (keyConflict, error) {
			var k keyConflict
			return k, row.Scan(&k.line, &k.key, &k.first)
		})
		if err != nil {
			return err
		}
		_, err = w.tx.Exec(ctx, "TRUNCATE "+keysTable)
		return err
	})
	if err != nil {
		if recordError(err) != nil {
			return all, nil
		}
		return nil, fmt.Errorf("judge the keys of a refused window: %w", classify(err))
	}
	// In input order, a line is refused when the table holds its key, or
	// when an earlier line with the same key was accepted.
	taken := map[[2]int]bool{}
	refused := map[int]bool{}
	for i := 0; i < len(found); {
		line, j := found[i].line, i
		for j < len(found) && found[j].line == line {
			j++
		}
		by := -1
		for _, f := range found[i:j] {
			if f.first < 0 || taken[[2]int{f.key, f.first}] {
				by = f.key
				break
			}
		}
		if by < 0 {
			for _, f := range found[i:j] {
				taken[[2]int{f.key, f.first}] = true
			}
		} else {
			refused[line] = true
			ref := iso.refs[line]
			sdk.Reject(ctx, ref.seq, int(ref.index), iso.record(line), 1, c.duplicate(w.index.Names(), by, iso.line(line)))
		}
		i = j
	}
	rest := all[:0]
	for _, i := range all {
		if !refused[i] {
			rest = append(rest, i)
		}
	}
	return rest, nil
}

// createKeysTable creates the table refused windows' keys are judged in,
// with the columns of every unique key, once per session.
func (w *writer) createKeysTable(ctx context.Context) error {
	if w.iso.keysTable {
		return nil
	}
	var names []string
	for _, k := range w.iso.check.keys {
		for _, col := range k.cols {
			if n := w.index.Names()[col]; !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	ddl := fmt.Sprintf("CREATE TEMP TABLE %s ON COMMIT DROP AS SELECT NULL::bigint AS %s, %s FROM %s WITH NO DATA",
		keysTable, keysLine, tabular.QuoteList(names), w.name)
	if _, err := w.tx.Exec(ctx, ddl); err != nil {
		return fmt.Errorf("create the table of a refused window's keys: %w", classify(err))
	}
	w.iso.keysTable = true
	return nil
}

// conflictsQuery finds, for each key the window lists, the lines whose
// key a row of the table holds (first -1) and the lines whose key other
// lines share (first: the first of them), by line and key.
func (w *writer) conflictsQuery() string {
	c := &w.iso.check
	var parts []string
	for k, fs := range c.fields {
		if fs == nil {
			continue
		}
		var cols, same, notNull []string
		for _, col := range c.keys[k].cols {
			q := tabular.QuoteIdent(w.index.Names()[col])
			cols = append(cols, q)
			same = append(same, fmt.Sprintf("t.%s = s.%s", q, q))
			notNull = append(notNull, q+" IS NOT NULL")
		}
		parts = append(parts, fmt.Sprintf(`SELECT s.%[1]s, %[2]d, -1 FROM %[3]s s WHERE EXISTS (SELECT FROM %[4]s t WHERE %[5]s)
			UNION ALL
			SELECT %[1]s, %[2]d, head FROM (SELECT %[1]s, min(%[1]s) OVER w AS head, count(*) OVER w AS n FROM %[3]s
				WHERE %[6]s WINDOW w AS (PARTITION BY %[7]s)) g WHERE n > 1`,
			keysLine, k, keysTable, w.name, strings.Join(same, " AND "), strings.Join(notNull, " AND "), strings.Join(cols, ", ")))
	}
	return strings.Join(parts, " UNION ALL ") + " ORDER BY 1, 2"
}
