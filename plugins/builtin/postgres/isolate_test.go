package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// TestCheckValueAgreesWithTheServer: what checkValue refuses the server
// refuses too (no good record is dead-lettered by the sink's own checks),
// and the common bad values are caught before the server sees them.
func TestCheckValueAgreesWithTheServer(t *testing.T) {
	conn, err := pgx.Connect(context.Background(), testpg.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	types := map[string]columnType{
		"bigint": {oid: pgtype.Int8OID}, "smallint": {oid: pgtype.Int2OID}, "numeric": {oid: pgtype.NumericOID},
		"double precision": {oid: pgtype.Float8OID}, "boolean": {oid: pgtype.BoolOID}, "uuid": {oid: pgtype.UUIDOID},
		"varchar(3)": {oid: pgtype.VarcharOID, typmod: 3 + 4}, "text": {oid: pgtype.TextOID},
	}
	cases := []struct {
		typ     string
		value   any
		refused bool // by checkValue
	}{
		{"bigint", "42", false}, {"bigint", " 42 ", false}, {"bigint", "+7", false}, {"bigint", 7, false},
		{"bigint", "-9223372036854775808", false}, {"bigint", "n/a", true}, {"bigint", "12.5", true},
		{"bigint", "99999999999999999999", true}, {"bigint", "", true}, {"bigint", "1e5", false},
		{"smallint", "40000", true}, {"smallint", "-32768", false},
		{"numeric", "12.34", false}, {"numeric", 12.5, false}, {"numeric", "1e5", false}, {"numeric", "NaN", false},
		{"numeric", " .5", false}, {"numeric", "-Infinity", false}, {"numeric", "n/a", true}, {"numeric", "abc", true},
		{"numeric", "12,5", true}, {"double precision", "inf", false}, {"double precision", "x", true},
		{"boolean", "TRUE", false}, {"boolean", "yes", false}, {"boolean", " off ", false}, {"boolean", "t", false},
		{"boolean", true, false}, {"boolean", "maybe", true}, {"boolean", "2", true}, {"boolean", "o", true},
		{"uuid", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", false}, {"uuid", "A0EEBC999C0B4EF8BB6D6BB9BD380A11", false},
		{"uuid", "xyz", true}, {"uuid", "a0eebc99", true},
		{"varchar(3)", "abc", false}, {"varchar(3)", "abc   ", false}, {"varchar(3)", "abcd", true}, {"varchar(3)", "äöü", false},
		{"text", "a\u0000b", true}, {"text", "anything", false}, {"text", `a\u0000b`, false},
		{"varchar(3)", "\u0000", true},
	}
	var scratch []byte
	for _, c := range cases {
		raw, _ := json.Marshal(c.value)
		err := checkValue(raw, types[c.typ], &scratch)
		if err == nil && raw[0] == '"' {
			// A NUL character is refused as the string is encoded.
			_, err = appendString(nil, raw)
		}
		if (err != nil) != c.refused {
			t.Errorf("%s %s: checkValue says %v", c.typ, raw, err)
		}
		if !c.refused {
			continue
		}
		// What the sink refuses, the server's COPY refuses as well.
		text := fmt.Sprint(c.value)
		ctx := context.Background()
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS chk; CREATE TEMP TABLE chk (v "+c.typ+")"); err != nil {
			t.Fatal(err)
		}
		if _, cerr := conn.PgConn().CopyFrom(ctx, strings.NewReader(text+"\n"), "COPY chk FROM STDIN"); cerr == nil {
			t.Errorf("%s %s: the sink refuses a value the server's COPY takes", c.typ, raw)
		}
	}
	if err := checkValue([]byte("null"), columnType{oid: pgtype.TextOID, notNull: true}, &scratch); err == nil {
		t.Error("a null for a NOT NULL column passed")
	}
}

// refusal is a record a session refused.
type refusal struct {
	seq      uint64
	index    int
	record   string
	attempts int
	err      string
}

// writeRefusing writes batches in one session with a record policy of two
// attempts and returns what it refused.
func writeRefusing(t testing.TB, config string, batches ...sdk.Batch) []refusal {
	t.Helper()
	var refused []refusal
	ctx := sdk.WithRecordPolicy(context.Background(), sdk.RecordPolicy{MaxAttempts: 2}, func(seq uint64, index int, record []byte, attempts int, err error) {
		refused = append(refused, refusal{seq, index, string(record), attempts, err.Error()})
	})
	w, err := Connector{}.Open(ctx, json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return refused
}

// rowsOf returns a query's rows, each a single text column.
func rowsOf(t *testing.T, url, query string) []string {
	t.Helper()
	rows, err := testConn(t, url).Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantRefused checks the refused records by batch and position, each
// tried once for a duplicate key naming constraint (or as told by err and
// attempts).
func wantRefused(t *testing.T, got []refusal, want ...refusal) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("refused %+v, want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.seq != w.seq || g.index != w.index || g.attempts != w.attempts || !strings.Contains(g.err, w.err) ||
			w.record != "" && g.record != w.record {
			t.Errorf("refusal %d = %+v, want %+v", i, g, w)
		}
	}
}

func dup(seq uint64, index int, constraint string) refusal {
	return refusal{seq: seq, index: index, attempts: 1, err: `duplicate key value violates unique constraint "` + constraint + `"`}
}

// TestDuplicatesWithinABatch: of the records of a batch sharing a key the
// first is written and the later ones refused, as they come, the table's
// COPY stream kept: keys in ascending order and out of it, and a key
// spelled otherwise ("09" for 9), which the server finds, judged the same
// way.
func TestDuplicatesWithinABatch(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_batch (id bigint PRIMARY KEY, v text)")
	config := cfg(`{"url": %q, "table": "dup_batch"}`, url)
	refused := writeRefusing(t, config,
		batchOf(1, `{"id":1,"v":"a"}`, `{"id":2,"v":"b"}`, `{"id":1,"v":"c"}`, `{"id":3,"v":"d"}`, `{"id":2,"v":"e"}`, `{"id":1,"v":"f"}`),
		batchOf(2, `{"id":4,"v":"g"}`, `{"id":"04","v":"h"}`, `{"id":5,"v":"i"}`, `{"id":"005","v":"j"}`, `{"id":5,"v":"k"}`))
	wantRefused(t, refused, dup(1, 2, "dup_batch_pkey"), dup(1, 4, "dup_batch_pkey"), dup(1, 5, "dup_batch_pkey"),
		dup(2, 1, "dup_batch_pkey"), dup(2, 3, "dup_batch_pkey"), dup(2, 4, "dup_batch_pkey"))
	if !strings.Contains(refused[0].err, "Key (id)=(1) already exists") || refused[0].record != `{"id":1,"v":"c"}` {
		t.Errorf("the first refusal: %+v", refused[0])
	}
	refused = writeRefusing(t, config,
		batchOf(1, `{"id":10,"v":"l"}`, `{"id":8,"v":"m"}`, `{"id":9,"v":"n"}`, `{"id":8,"v":"o"}`, `{"id":"09","v":"p"}`, `{"id":11,"v":"q"}`))
	wantRefused(t, refused, dup(1, 3, "dup_batch_pkey"), dup(1, 4, "dup_batch_pkey"))
	got := rowsOf(t, url, "SELECT concat_ws(' ', id, v) FROM dup_batch ORDER BY id")
	if want := []string{"1 a", "2 b", "3 d", "4 g", "5 i", "8 m", "9 n", "10 l", "11 q"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}

// TestDuplicatesOfRowsInTheTable: a record whose key the table already
// holds (from before the session, or an earlier window of it) is refused
// and the row stays as it was; the other records of its window are
// written once.
func TestDuplicatesOfRowsInTheTable(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_table (id bigint PRIMARY KEY, v text)", "INSERT INTO dup_table VALUES (1, 'old'), (2, 'old')")
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "dup_table"}`, url),
		batchOf(1, `{"id":3,"v":"new"}`, `{"id":1,"v":"new"}`, `{"id":4,"v":"new"}`, `{"id":1,"v":"again"}`, `{"id":"4","v":"again"}`, `{"id":2,"v":"new"}`),
		batchOf(2, `{"id":5,"v":"new"}`))
	wantRefused(t, refused, dup(1, 1, "dup_table_pkey"), dup(1, 3, "dup_table_pkey"), dup(1, 4, "dup_table_pkey"), dup(1, 5, "dup_table_pkey"))
	got := rowsOf(t, url, "SELECT concat_ws(' ', id, v) FROM dup_table ORDER BY id")
	if want := []string{"1 old", "2 old", "3 new", "4 new", "5 new"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}

// TestDuplicatesOfACompositeKey: a key of two columns is a duplicate only
// when both match, a null in it never is one.
func TestDuplicatesOfACompositeKey(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_pair (a int, b text, v text, UNIQUE (a, b))", "INSERT INTO dup_pair VALUES (2, 'y', 'old')")
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "dup_pair"}`, url),
		batchOf(1, `{"a":1,"b":"x","v":"1"}`, `{"a":1,"b":"y","v":"2"}`, `{"a":1,"b":"x","v":"3"}`, `{"a":2,"b":"x","v":"4"}`,
			`{"a":1,"b":null,"v":"5"}`, `{"a":1,"b":null,"v":"6"}`, `{"a":2,"b":"y","v":"7"}`))
	wantRefused(t, refused, dup(1, 2, "dup_pair_a_b_key"), dup(1, 6, "dup_pair_a_b_key"))
	if !strings.Contains(refused[0].err, "Key (a, b)=(1, x) already exists") {
		t.Errorf("the first refusal: %+v", refused[0])
	}
	got := rowsOf(t, url, "SELECT concat_ws(' ', a, coalesce(b, '-'), v) FROM dup_pair ORDER BY v")
	if want := []string{"1 x 1", "1 y 2", "2 x 4", "1 - 5", "1 - 6", "2 y old"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}

// TestDuplicatesOfASecondUniqueKey: a record may repeat the key of a
// second unique constraint, which its refusal names; and in input order, a
// record repeating the key of one the table refused is written, as the
// refused one never was.
func TestDuplicatesOfASecondUniqueKey(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_two (id bigint PRIMARY KEY, email text CONSTRAINT dup_two_email UNIQUE)",
		"INSERT INTO dup_two VALUES (10, 'old@x')")
	for _, split := range []bool{false, true} {
		exec(t, url, "DELETE FROM dup_two WHERE id <> 10")
		recs := []string{`{"id":1,"email":"a@x"}`, `{"id":2,"email":"b@x"}`, `{"id":3,"email":"a@x"}`,
			`{"id":10,"email":"c@x"}`, `{"id":11,"email":"c@x"}`, `{"id":12,"email":"c@x"}`, `{"id":13,"email":"old@x"}`}
		batches := []sdk.Batch{batchOf(1, recs...)}
		want := []refusal{dup(1, 2, "dup_two_email"), dup(1, 3, "dup_two_pkey"), dup(1, 5, "dup_two_email"), dup(1, 6, "dup_two_email")}
		if split {
			// Without a row of the table refused, the window's own checks
			// judge it.
			batches = []sdk.Batch{batchOf(1, recs[:3]...)}
			want = want[:1]
		}
		wantRefused(t, writeRefusing(t, cfg(`{"url": %q, "table": "dup_two"}`, url), batches...), want...)
		got := rowsOf(t, url, "SELECT concat_ws(' ', id, email) FROM dup_two ORDER BY id")
		wantRows := []string{"1 a@x", "2 b@x", "10 old@x", "11 c@x"}
		if split {
			wantRows = []string{"1 a@x", "2 b@x", "10 old@x"}
		}
		if !slices.Equal(got, wantRows) {
			t.Errorf("split %v: the table holds %v, want %v", split, got, wantRows)
		}
	}
}

// TestDuplicateAndOtherRefusalsInOneWindow: a duplicate, a value its
// column cannot hold and a check constraint only the server judges, in one
// window: each is refused as its kind is (the check violation tried as
// often as the policy says), the rest written once.
func TestDuplicateAndOtherRefusalsInOneWindow(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_mix (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0))", "INSERT INTO dup_mix VALUES (100, 1)")
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "dup_mix"}`, url),
		batchOf(1, `{"id":1,"amount":1}`, `{"id":2,"amount":"n/a"}`, `{"id":1,"amount":2}`, `{"id":3,"amount":-1}`,
			`{"id":100,"amount":3}`, `{"id":4,"amount":4}`),
		batchOf(2, `{"id":5,"amount":5}`, `{"id":5,"amount":6}`))
	wantRefused(t, refused,
		refusal{seq: 1, index: 1, attempts: 1, err: `invalid input syntax for type numeric: "n/a"`},
		dup(1, 2, "dup_mix_pkey"), dup(1, 4, "dup_mix_pkey"), dup(2, 1, "dup_mix_pkey"),
		refusal{seq: 1, index: 3, attempts: 2, err: "violates check constraint"})
	got := rowsOf(t, url, "SELECT concat_ws(' ', id, amount) FROM dup_mix ORDER BY id")
	if want := []string{"1 1", "4 4", "5 5", "100 1"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}

// TestRefusedRecordsAsReceived: the refused records of a window spanning
// batches are letters of the records as they came, whichever batch they
// came in, and the lines around a held duplicate are written once.
func TestRefusedRecordsAsReceived(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE as_received (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0))")
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "as_received"}`, url),
		batchOf(1, `{"id":1,"amount":1}`, `{"id":2,"amount":2}`),
		batchOf(2, `{"id":3,"amount":3}`, `{ "id": 4,  "amount": -4 }`, `{"id":5,"amount":5}`),
		batchOf(3, `{"id":6,"amount":6}`, `{"id": 3, "amount": 33}`, `{"id":7,"amount":7}`, `{"id":8,"amount":"x"}`, `{"id":9,"amount":-9}`))
	wantRefused(t, refused,
		refusal{seq: 3, index: 3, attempts: 1, err: `invalid input syntax for type numeric`, record: `{"id":8,"amount":"x"}`},
		refusal{seq: 3, index: 1, attempts: 1, err: "duplicate key value", record: `{"id": 3, "amount": 33}`},
		refusal{seq: 2, index: 1, attempts: 2, err: "violates check constraint", record: `{ "id": 4,  "amount": -4 }`},
		refusal{seq: 3, index: 4, attempts: 2, err: "violates check constraint", record: `{"id":9,"amount":-9}`})
	got := rowsOf(t, url, "SELECT concat_ws(' ', id, amount) FROM as_received ORDER BY id")
	if want := []string{"1 1", "2 2", "3 3", "5 5", "6 6", "7 7"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}

// TestRefusalsAcrossWindows: a session longer than its windows, a record
// the server refuses in several of them, writes every other record once:
// the first refusal shrinks the windows, so the later ones end full.
func TestRefusalsAcrossWindows(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE across (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0), v text)")
	const rows = 60_000
	bad := map[int]bool{100: true, 25_000: true, 41_000: true, 59_999: true}
	pad := strings.Repeat("x", 60)
	var batches []sdk.Batch
	w := sdk.NewBatchWriter(func(b sdk.Batch) error {
		b.Records = slices.Clone(b.Records)
		batches = append(batches, b)
		return nil
	})
	for id := 1; id <= rows; id++ {
		amount := id
		if bad[id] {
			amount = -1
		}
		if err := w.AppendFunc(func(dst []byte) ([]byte, error) {
			return fmt.Appendf(dst, `{"id":%d,"amount":%d,"v":"%s"}`, id, amount, pad), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "across"}`, url), batches...)
	var got []int
	for _, r := range refused {
		var rec struct{ ID int }
		if err := json.Unmarshal([]byte(r.record), &rec); err != nil || r.attempts != 2 || !strings.Contains(r.err, "violates check constraint") {
			t.Errorf("refused %+v", r)
		}
		got = append(got, rec.ID)
	}
	slices.Sort(got)
	if want := []int{100, 25_000, 41_000, 59_999}; !slices.Equal(got, want) {
		t.Errorf("refused ids %v, want %v", got, want)
	}
	sum := 0
	for id := 1; id <= rows; id++ {
		if !bad[id] {
			sum += id
		}
	}
	if got := rowsOf(t, url, "SELECT concat_ws(' ', count(*), sum(id), count(DISTINCT id)) FROM across"); got[0] != fmt.Sprintf("%d %d %d", rows-len(bad), sum, rows-len(bad)) {
		t.Errorf("the table holds (count, sum, distinct) %s, want %d %d", got[0], rows-len(bad), sum)
	}
}

// TestUpsertWithARecordPolicy: an upsert still lets the last record of a
// key win, refusing none for it, and refuses a record repeating another
// unique key.
func TestUpsertWithARecordPolicy(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_upsert (id bigint PRIMARY KEY, email text UNIQUE, v text)", "INSERT INTO dup_upsert VALUES (1, 'a@x', 'old')")
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "dup_upsert", "write_mode": "upsert", "key": ["id"]}`, url),
		batchOf(1, `{"id":1,"email":"a@x","v":"first"}`, `{"id":2,"email":"b@x","v":"x"}`, `{"id":1,"email":"a@x","v":"last"}`,
			`{"id":3,"email":"b@x","v":"y"}`))
	wantRefused(t, refused, refusal{seq: 1, index: 3, attempts: 2, err: `duplicate key value violates unique constraint "dup_upsert_email_key"`})
	got := rowsOf(t, url, "SELECT concat_ws(' ', id, email, v) FROM dup_upsert ORDER BY id")
	if want := []string{"1 a@x last", "2 b@x x"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}

// TestKeySet: a lookup walks every line recorded under a hash, colliding
// hashes and growth included, and a reset set holds none.
func TestKeySet(t *testing.T) {
	var s keySet
	s.reset()
	for line := range 10000 {
		s.add(uint64(line%7+1), line)
	}
	for h := uint64(1); h <= 8; h++ {
		var lines []int
		for i := s.first(h); s.hashes[i] != 0; i = s.next(i) {
			if s.hashes[i] == h {
				lines = append(lines, int(s.lines[i]))
			}
		}
		slices.Sort(lines)
		var want []int
		for line := int(h - 1); h <= 7 && line < 10000; line += 7 {
			want = append(want, line)
		}
		if !slices.Equal(lines, want) {
			t.Fatalf("hash %d: %d lines, want %d", h, len(lines), len(want))
		}
	}
	s.reset()
	if i := s.first(3); s.hashes[i] != 0 {
		t.Error("a reset set holds a line")
	}
}

// TestDuplicatesHeldUntilTheWindowIsThrough: the connection of a session
// with duplicates held back is killed mid-COPY; the session fails,
// commits nothing and refuses no record (a held record is refused only
// once its window is through), and a retry writes each key once.
func TestDuplicatesHeldUntilTheWindowIsThrough(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE dup_killed (id bigint PRIMARY KEY, first_name text, country text, amount numeric, created_at timestamptz, active boolean, attributes jsonb)")
	recs := generated(3, 1, 3000)
	for i := 500; i < len(recs); i += 1000 {
		recs[i] = strings.Replace(recs[i], fmt.Sprintf(`{"id":%d,`, i+1), fmt.Sprintf(`{"id":%d,`, i), 1)
	}
	config := cfg(`{"url": %q, "table": "dup_killed"}`, url)
	var refused []refusal
	ctx := sdk.WithRecordPolicy(context.Background(), sdk.RecordPolicy{MaxAttempts: 2}, func(seq uint64, index int, record []byte, attempts int, err error) {
		refused = append(refused, refusal{seq, index, string(record), attempts, err.Error()})
	})
	w, err := Connector{}.Open(ctx, json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	batches := batchesOf(1000, recs)
	for _, b := range batches[:2] {
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	testpg.KillCopy(t, url)
	err = w.Write(ctx, batches[2])
	if err == nil {
		err = w.Close(ctx)
	} else {
		_ = w.Abort(ctx)
	}
	if err == nil || !sdk.IsTransient(err) {
		t.Fatalf("a killed connection: %v, want a transient error", err)
	}
	if n := len(rowsOf(t, url, "SELECT id::text FROM dup_killed")); n != 0 || len(refused) != 0 {
		t.Fatalf("a failed session committed %d rows and refused %+v", n, refused)
	}
	wantRefused(t, writeRefusing(t, config, batches...), dup(1, 500, "dup_killed_pkey"), dup(2, 500, "dup_killed_pkey"), dup(3, 500, "dup_killed_pkey"))
	if n := len(rowsOf(t, url, "SELECT id::text FROM dup_killed")); n != len(recs)-3 {
		t.Fatalf("the retry wrote %d rows, want %d", n, len(recs)-3)
	}
}

// TestWindowsStartWithEncodedLines: the batch that ends a full window (or
// one listing other columns) is encoded before that window's verdict and
// starts the next window. A refused record of the first window shrinks
// the windows, so that many batches do; in each of them the first record
// holds a value its column cannot take, the third repeats the second's
// key and the fourth the key of the batch before's last record. Every
// refused record is refused once, for its own fault, and every other
// record is written once.
func TestWindowsStartWithEncodedLines(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE early (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0), active boolean, v text)")
	const size, count = 1000, 24
	pad := strings.Repeat("x", 60)
	var batches []sdk.Batch
	var want []refusal
	written := map[int]bool{}
	for k := range count {
		var recs []string
		for i := range size {
			id, amount := k*size+i+1, fmt.Sprint(k*size+i)
			switch {
			case k == 0 && i == 49:
				amount = "-1"
				want = append(want, refusal{seq: 1, index: i, attempts: 2, err: "violates check constraint"})
			case k > 0 && i == 0:
				amount = `"n/a"`
				want = append(want, refusal{seq: uint64(k + 1), index: i, attempts: 1, err: "invalid input syntax for type numeric"})
			case k > 0 && i == 2:
				id--
				want = append(want, dup(uint64(k+1), i, "early_pkey"))
			case k > 0 && i == 3:
				id = k * size
				want = append(want, dup(uint64(k+1), i, "early_pkey"))
			default:
				written[id] = true
			}
			if k == count/2 {
				// A batch without the active column: its COPY lists others.
				recs = append(recs, fmt.Sprintf(`{"id":%d,"amount":%s,"v":"%s"}`, id, amount, pad))
				continue
			}
			recs = append(recs, fmt.Sprintf(`{"id":%d,"amount":%s,"active":%t,"v":"%s"}`, id, amount, i%2 == 0, pad))
		}
		batches = append(batches, batchOf(uint64(k+1), recs...))
	}
	got := writeRefusing(t, cfg(`{"url": %q, "table": "early"}`, url), batches...)
	slices.SortFunc(got, func(a, b refusal) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.index, b.index))
	})
	wantRefused(t, got, want...)
	sum := 0
	for id := range written {
		sum += id
	}
	if got := rowsOf(t, url, "SELECT concat_ws(' ', count(*), sum(id), count(DISTINCT id)) FROM early"); got[0] != fmt.Sprintf("%d %d %d", len(written), sum, len(written)) {
		t.Errorf("the table holds (count, sum, distinct) %s, want %d %d", got[0], len(written), sum)
	}
}

// TestIntegerKeysParsedOnce: a key of one integer column is judged by the
// value its check parsed, whatever the spelling: a quoted number repeats a
// bare one, a number out of the column's range is refused by the check
// (not as a duplicate), and a spelling the check does not parse (an
// escaped digit) is still judged by its value.
func TestIntegerKeysParsedOnce(t *testing.T) {
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE int_keys (id integer PRIMARY KEY, v text)")
	refused := writeRefusing(t, cfg(`{"url": %q, "table": "int_keys"}`, url),
		batchOf(1, `{"id":"1","v":"a"}`, `{"id":1,"v":"b"}`, `{"id":"3000000000","v":"c"}`, `{"id":"\u0032","v":"d"}`, `{"id":2,"v":"e"}`, `{"id":"-3","v":"f"}`))
	// The check refuses at once; duplicates once the window is through.
	wantRefused(t, refused, refusal{seq: 1, index: 2, attempts: 1, err: `value "3000000000" is out of range for type integer`},
		dup(1, 1, "int_keys_pkey"), dup(1, 4, "int_keys_pkey"))
	got := rowsOf(t, url, "SELECT concat_ws(' ', id, v) FROM int_keys ORDER BY id")
	if want := []string{"-3 f", "1 a", "2 d"}; !slices.Equal(got, want) {
		t.Errorf("the table holds %v, want %v", got, want)
	}
}
