package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular/tabulartest"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

var batchOf = tabulartest.Batch

func write(t *testing.T, config string, abort bool, batches ...sdk.Batch) error {
	t.Helper()
	return tabulartest.Write(t, Connector{}, config, abort, batches...)
}

func mustRead(t *testing.T, config string) []string {
	t.Helper()
	return tabulartest.MustRead(t, Connector{}, config)
}

func cfg(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// testConn connects to the test database until the test ends.
func testConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// exec runs SQL on the test database.
func exec(t testing.TB, url string, stmts ...string) {
	t.Helper()
	conn := testConn(t, url)
	for _, s := range stmts {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func generated(seed int64, from, to int) []string {
	var recs []string
	for id := from; id <= to; id++ {
		recs = append(recs, string(generate.AppendRow(nil, seed, int64(id))))
	}
	return recs
}

func TestSinkCreatesTableAndSourceRoundTrips(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	want := generated(3, 1, 3000)
	if err := write(t, cfg(`{"url": %q, "table": "people"}`, url), false,
		batchOf(1, want[:1000]...), batchOf(2, want[1000:2500]...), batchOf(3, want[2500:]...)); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM people ORDER BY id"}`, url))
	if !reflect.DeepEqual(tabulartest.Decoded(t, got), tabulartest.Decoded(t, want)) {
		t.Fatalf("round trip differs; first record:\n got %s\nwant %s", got[0], want[0])
	}
	// Exact text up to the jsonb column (which normalises its object), not
	// just equal values: amounts keep their digits, timestamps come back as
	// RFC 3339.
	for i := range got {
		cut := func(s string) string { return s[:strings.Index(s, `"attributes"`)] }
		if cut(got[i]) != cut(want[i]) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	var types []string
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, "SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'people'::regclass AND attnum > 0 ORDER BY attnum")
	types, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"id bigint", "first_name text", "country text", "amount numeric", "created_at timestamp with time zone", "active boolean", "attributes jsonb"}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("created columns %v, want %v", types, wantTypes)
	}
}

func TestSourceTypes(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	exec(t, url, `CREATE TABLE things (
		id int PRIMARY KEY, name text, score float8, price numeric, ok boolean, doc jsonb, at timestamptz,
		local timestamp, day date, tags text[], uid uuid, note varchar(10))`,
		`INSERT INTO things VALUES
		(1, E'tab\t"q"\n', 'NaN', 12.50, true, '{"a": [1, 2]}', '2024-03-01 10:00:00.25+02', '2024-03-01 10:00:00', '2024-03-01', '{x,y}', '00000000-0000-0000-0000-000000000001', 'ü'),
		(2, NULL, 1.5e300, -0.001, false, 'null', 'infinity', NULL, NULL, NULL, NULL, NULL)`)
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM things ORDER BY id"}`, url))
	want := []string{
		`{"id":1,"name":"tab\t\"q\"\n","score":"NaN","price":12.50,"ok":true,"doc":{"a": [1, 2]},"at":"2024-03-01T08:00:00.25Z","local":"2024-03-01T10:00:00","day":"2024-03-01","tags":"{x,y}","uid":"00000000-0000-0000-0000-000000000001","note":"ü"}`,
		`{"id":2,"name":null,"score":1.5e+300,"price":-0.001,"ok":false,"doc":null,"at":"infinity","local":null,"day":null,"tags":null,"uid":null,"note":null}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range got {
		if !json.Valid([]byte(r)) {
			t.Errorf("not JSON: %s", r)
		}
	}
}

func TestSinkModes(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	upsert := cfg(`{"url": %q, "table": "kv", "write_mode": "upsert", "key": ["k"]}`, url)
	if err := write(t, upsert, false, batchOf(1, `{"k":"a","v":1,"w":"x"}`, `{"k":"b","v":2,"w":"y"}`)); err != nil {
		t.Fatal(err)
	}
	// Within one batch the last record of a key wins; a batch without a
	// column leaves that column alone.
	if err := write(t, upsert, false,
		batchOf(1, `{"k":"b","v":20}`, `{"k":"c","v":3}`, `{"k":"c","v":30}`),
		batchOf(2, `{"k":"d","w":"new"}`)); err != nil {
		t.Fatal(err)
	}
	all := cfg(`{"url": %q, "query": "SELECT k, v, w FROM kv ORDER BY k"}`, url)
	want := []string{`{"k":"a","v":1,"w":"x"}`, `{"k":"b","v":20,"w":"y"}`, `{"k":"c","v":30,"w":null}`, `{"k":"d","v":null,"w":"new"}`}
	if got := mustRead(t, all); !slices.Equal(got, want) {
		t.Errorf("after upsert:\n%v\nwant\n%v", got, want)
	}

	overwrite := cfg(`{"url": %q, "table": "kv", "write_mode": "overwrite"}`, url)
	if err := write(t, overwrite, true, batchOf(1, `{"k":"z"}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, all); len(got) != 4 {
		t.Errorf("an aborted overwrite changed the table: %v", got)
	}
	if err := write(t, overwrite, false, batchOf(1, `{"k":"z","v":0}`), batchOf(2, `{"k":"y"}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, all); !slices.Equal(got, []string{`{"k":"y","v":null,"w":null}`, `{"k":"z","v":0,"w":null}`}) {
		t.Errorf("after overwrite: %v", got)
	}

	// Append into a table with a serial id the records do not carry: the
	// column is left out of the COPY and gets its default.
	exec(t, url, "CREATE TABLE events (id bigserial PRIMARY KEY, body text NOT NULL, at timestamptz DEFAULT '2000-01-01Z')")
	if err := write(t, cfg(`{"url": %q, "table": "events"}`, url), false, batchOf(1, `{"body":"a\\b\tc"}`, `{"body":"d"}`)); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM events ORDER BY id"}`, url))
	if !slices.Equal(got, []string{`{"id":1,"body":"a\\b\tc","at":"2000-01-01T00:00:00Z"}`, `{"id":2,"body":"d","at":"2000-01-01T00:00:00Z"}`}) {
		t.Errorf("events: %v", got)
	}
}

func TestSinkCommitsExactlyTheAcknowledgedBatches(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	config := cfg(`{"url": %q, "table": "t"}`, url)
	ctx := context.Background()
	w, err := Connector{}.Open(ctx, json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := w.Write(ctx, batchOf(seq, fmt.Sprintf(`{"n":%d}`, seq))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cfg(`{"url": %q, "table": "t"}`, url)); len(got) != 3 {
		t.Errorf("committed %v, want the 3 acknowledged batches", got)
	}
	err = write(t, config, false, batchOf(1, `{"n":4}`), batchOf(2, `{"n":"five"}`))
	if err == nil || !strings.Contains(err.Error(), "invalid input syntax for type bigint") {
		t.Fatalf("a bad value: %v", err)
	}
	if got := mustRead(t, cfg(`{"url": %q, "table": "t"}`, url)); len(got) != 3 {
		t.Errorf("a failed session left rows behind: %v", got)
	}
}

func TestSinkErrors(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE plain (k text, v int)")
	cases := []struct {
		config string
		batch  sdk.Batch
		msg    string
	}{
		{cfg(`{"url": %q, "table": "plain", "write_mode": "upsert", "key": ["k"]}`, url), batchOf(1, `{"k":"a"}`), "needs a primary key or unique index on exactly (k)"},
		{cfg(`{"url": %q, "table": "plain"}`, url), batchOf(1, `{"k":"a","x":1}`), `record 1: field "x" is not a column of table plain`},
		{cfg(`{"url": %q, "table": "fresh", "write_mode": "upsert", "key": ["id"]}`, url), batchOf(1, `{"k":"a"}`), `key column "id" is not a column of table fresh`},
		{cfg(`{"url": "postgres://nobody@127.0.0.1:1/x?connect_timeout=5", "table": "t"}`), batchOf(1, `{"k":"a"}`), "connect to postgres"},
	}
	for _, tc := range cases {
		err := write(t, tc.config, false, tc.batch)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.config, err, tc.msg)
		}
	}
	err := write(t, `{"url": "postgres://nobody@127.0.0.1:1/x", "table": "t"}`, false)
	if !sdk.IsTransient(err) {
		t.Errorf("an unreachable server should be worth a retry: %v", err)
	}
}

func TestShardsUnionEqualsUnshardedRead(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	exec(t, url,
		"CREATE TABLE pk (id bigint PRIMARY KEY, v text)",
		"INSERT INTO pk SELECT i * i, 'v' || i FROM generate_series(1, 2000) i",
		"CREATE TABLE codes (code text PRIMARY KEY, v int)",
		"INSERT INTO codes SELECT 'c' || lpad(i::text, 5, '0'), i FROM generate_series(1, 1000) i",
		"CREATE TABLE heap (v text, grp int, at timestamptz)",
		"INSERT INTO heap SELECT 'h' || i, CASE WHEN i % 10 = 0 THEN NULL ELSE i % 7 END, '2024-01-01Z'::timestamptz + i * interval '1 minute' FROM generate_series(1, 1000) i",
		"CREATE TABLE tiny (id numeric PRIMARY KEY)",
		"INSERT INTO tiny VALUES (1.5), (2.25), (3)",
	)
	configs := []string{
		cfg(`{"url": %q, "table": "pk"}`, url),
		cfg(`{"url": %q, "table": "codes"}`, url),
		cfg(`{"url": %q, "query": "SELECT v, grp FROM heap", "key": "grp"}`, url),
		cfg(`{"url": %q, "table": "heap", "key": "at"}`, url),
	}
	for _, config := range configs {
		tabulartest.CheckShards(t, Connector{}, config, 1, 2, 3, 8)
	}
	// More shards than rows: each row in one shard, no empty ranges.
	tabulartest.CheckShards(t, Connector{}, cfg(`{"url": %q, "table": "tiny"}`, url), 10)
	_, shards := tabulartest.ShardUnion(t, Connector{}, configs[0], 4)
	if len(shards) != 4 {
		t.Errorf("4 shards of 2000 distinct keys: got %d", len(shards))
	}
	_, shards = tabulartest.ShardUnion(t, Connector{}, configs[2], 20)
	if len(shards) > 8 {
		t.Errorf("a key with 7 distinct values gives at most 8 shards, got %d", len(shards))
	}
	_, err := Connector{}.Shards(context.Background(), json.RawMessage(cfg(`{"url": %q, "table": "heap"}`, url)), 2)
	if err == nil || !strings.Contains(err.Error(), "no single-column primary key") {
		t.Errorf("sharding a table without a primary key: %v", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE t (a int)")
	ctx := context.Background()
	cases := []struct {
		role sdk.Role
		cfg  string
		ok   bool
		msg  string
	}{
		{sdk.RoleSource, cfg(`{"url": %q, "table": "t"}`, url), true, ""},
		{sdk.RoleSource, cfg(`{"url": %q, "table": "nope"}`, url), false, "does not exist"},
		{sdk.RoleSource, cfg(`{"url": %q, "query": "SELECT nope FROM t"}`, url), false, `column "nope" does not exist`},
		{sdk.RoleSink, cfg(`{"url": %q, "table": "t", "write_mode": "overwrite"}`, url), true, ""},
		{sdk.RoleSink, cfg(`{"url": %q, "table": "later"}`, url), true, "it will be created"},
	}
	for _, tc := range cases {
		items, err := Connector{}.Check(ctx, tc.role, json.RawMessage(tc.cfg))
		if err != nil || len(items) != 2 || !items[0].OK || items[1].OK != tc.ok || !strings.Contains(items[1].Message, tc.msg) {
			t.Errorf("%s %s: %+v %v", tc.role, tc.cfg, items, err)
		}
	}
	items, err := Connector{}.Check(ctx, sdk.RoleSource, json.RawMessage(`{"url": "postgres://x@127.0.0.1:1/x", "table": "t"}`))
	if err != nil || len(items) != 1 || items[0].OK {
		t.Errorf("check against an unreachable server: %+v %v", items, err)
	}
}

// batchesOf cuts records into batches of size records, numbered from 1.
func batchesOf(size int, recs []string) []sdk.Batch {
	var out []sdk.Batch
	for i := 0; i < len(recs); i += size {
		out = append(out, batchOf(uint64(len(out)+1), recs[i:min(i+size, len(recs))]...))
	}
	return out
}

// TestSinkFailureMidCopyCommitsNothing injects failures into a COPY that
// spans batches: the server rejecting a row of a later batch, and the
// session's connection killed. Either way the session fails, nothing it
// acknowledged is committed on its own, and a retry writes every record
// exactly once.
func TestSinkFailureMidCopyCommitsNothing(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE checked (id bigint PRIMARY KEY, first_name text, country text, amount numeric CHECK (amount >= 0), created_at timestamptz, active boolean, attributes jsonb)")
	want := generated(5, 1, 4000)
	config := cfg(`{"url": %q, "table": "checked"}`, url)
	ctx := context.Background()

	t.Run("rejected row", func(t *testing.T) {
		batches := batchesOf(1000, want)
		bad := slices.Clone(want[2000:3000])
		bad[499] = strings.Replace(bad[499], `"amount":`, `"amount":-`, 1)
		batches[2] = batchOf(3, bad...)
		w, err := Connector{}.Open(ctx, json.RawMessage(config))
		if err != nil {
			t.Fatal(err)
		}
		err = finish(t, w, batches)
		if err == nil || !strings.Contains(err.Error(), "batch 3, record 500") || !strings.Contains(err.Error(), "checked_amount_check") {
			t.Fatalf("a row the server rejects: %v, want it named by batch and record", err)
		}
		if n := len(mustRead(t, cfg(`{"url": %q, "table": "checked"}`, url))); n != 0 {
			t.Fatalf("a failed session committed %d rows", n)
		}
	})

	t.Run("connection killed", func(t *testing.T) {
		batches := batchesOf(1000, want)
		w, err := Connector{}.Open(ctx, json.RawMessage(config))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches[:2] {
			if err := w.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		// The two acknowledged batches are on their way inside one COPY:
		// kill its connection once the server runs it.
		testpg.KillCopy(t, url)
		if err := finish(t, w, batches[2:]); err == nil || !sdk.IsTransient(err) {
			t.Fatalf("a killed connection: %v, want a transient error", err)
		}
		if n := len(mustRead(t, cfg(`{"url": %q, "table": "checked"}`, url))); n != 0 {
			t.Fatalf("a failed session committed %d rows", n)
		}
	})

	// The retry, a fresh session, writes every record once.
	if err := write(t, config, false, batchesOf(1000, want)...); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM checked ORDER BY id"}`, url))
	if !reflect.DeepEqual(tabulartest.Decoded(t, got), tabulartest.Decoded(t, want)) {
		t.Fatalf("after the retry the table holds %d rows, not the %d records", len(got), len(want))
	}
}

// finish writes batches to w until one fails, then closes the session, or
// aborts it after a failure as faucet does, and returns the first error.
func finish(t *testing.T, w sdk.Writer, batches []sdk.Batch) error {
	t.Helper()
	ctx := context.Background()
	for _, b := range batches {
		if err := w.Write(ctx, b); err != nil {
			if aerr := w.Abort(ctx); aerr != nil {
				t.Logf("abort after %v: %v", err, aerr)
			}
			return err
		}
	}
	return w.Close(ctx)
}

// TestSinkCloseAfterARejectedBatch: a batch the sink refuses (a field that
// is no column) never reaches the COPY, so closing the session commits
// exactly the batches acknowledged before it.
func TestSinkCloseAfterARejectedBatch(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	want := generated(6, 1, 3000)
	ctx := context.Background()
	w, err := Connector{}.Open(ctx, json.RawMessage(cfg(`{"url": %q, "table": "t"}`, url)))
	if err != nil {
		t.Fatal(err)
	}
	batches := batchesOf(1000, want)
	for _, b := range batches[:2] {
		if err := w.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	bad := slices.Clone(want[2000:])
	bad[10] = strings.Replace(bad[10], `"country":`, `"kountry":`, 1)
	if err := w.Write(ctx, batchOf(3, bad...)); err == nil || !strings.Contains(err.Error(), `record 11: field "kountry"`) {
		t.Fatalf("a record with a field that is no column: %v", err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM t ORDER BY id"}`, url))
	if !reflect.DeepEqual(tabulartest.Decoded(t, got), tabulartest.Decoded(t, want[:2000])) {
		t.Fatalf("committed %d rows, want exactly the 2000 of the acknowledged batches", len(got))
	}
}

// FuzzAppendString checks the one-pass JSON → COPY string conversion
// against decoding with encoding/json and escaping the text.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"tab\there"`, `"q\"b\\s\/"`, `"\u00e9\ud83d\ude00\u2028"`, `"\ud800x"`, `"\u000a\b\f\r"`, `"a` + "\t" + `b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		marshalled, _ := json.Marshal(raw)
		for _, in := range []string{raw, string(marshalled)} {
			var text string
			if !utf8.ValidString(in) || strings.TrimSpace(in) != in || json.Unmarshal([]byte(in), &text) != nil {
				continue
			}
			got, err := appendString(nil, []byte(in))
			if err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			if want := appendEscaped(nil, []byte(text)); string(got) != string(want) {
				t.Fatalf("%q: got %q, want %q", in, got, want)
			}
		}
	})
}

// TestSinkSessionsShareANewTable: sessions writing one missing table at
// once (the shards of a run) share the table the first of them creates,
// and a failed session drops a table it created only while nothing else
// uses it.
func TestSinkSessionsShareANewTable(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	ctx := context.Background()
	open := func(table string) sdk.Writer {
		t.Helper()
		w, err := Connector{}.Open(ctx, json.RawMessage(cfg(`{"url": %q, "table": %q}`, url, table)))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	want := generated(7, 1, 2000)
	a, b := open("shared"), open("shared")
	if err := a.Write(ctx, batchOf(1, want[:1000]...)); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, batchOf(1, want[1000:]...)); err != nil {
		t.Fatalf("a second session on the table the first created: %v", err)
	}
	// The creator fails; the other session still uses the table.
	if err := a.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM shared ORDER BY id"}`, url))
	if !reflect.DeepEqual(tabulartest.Decoded(t, got), tabulartest.Decoded(t, want[1000:])) {
		t.Fatalf("the table holds %d rows, want the surviving session's 1000", len(got))
	}

	alone := open("alone")
	if err := alone.Write(ctx, batchOf(1, want[:10]...)); err != nil {
		t.Fatal(err)
	}
	if err := alone.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cfg(`{"url": %q, "query": "SELECT to_regclass('alone') IS NULL AS gone"}`, url)); !slices.Equal(got, []string{`{"gone":true}`}) {
		t.Errorf("an aborted session left behind the table it created: %v", got)
	}
}

// TestSinkRecordShapes: batches whose records share one layout go through
// the fast path, in their own column order; a batch mixing layouts takes
// the general one; either way every value lands in its column, and a
// column no record of a batch has gets its default.
func TestSinkRecordShapes(t *testing.T) {
	t.Parallel()
	url := testpg.Database(t)
	exec(t, url, "CREATE TABLE shapes (a int, b int, c text DEFAULT 'd')")
	err := write(t, cfg(`{"url": %q, "table": "shapes"}`, url), false,
		batchOf(1, `{"a":1,"b":2}`, `{"a":3,"b":4}`),
		batchOf(2, `{"b":5,"a":6}`),
		batchOf(3, `{"a":7}`, `{"b":8,"c":"x"}`),
		batchOf(4, `{"c":"y\tz","a":9}`, `{"c":null,"a":10}`),
		batchOf(5, `{"a":11,"a":12}`))
	if err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"url": %q, "query": "SELECT * FROM shapes ORDER BY a"}`, url))
	want := []string{
		`{"a":1,"b":2,"c":"d"}`, `{"a":3,"b":4,"c":"d"}`, `{"a":6,"b":5,"c":"d"}`, `{"a":7,"b":null,"c":null}`,
		`{"a":9,"b":null,"c":"y\tz"}`, `{"a":10,"b":null,"c":null}`, `{"a":12,"b":null,"c":"d"}`, `{"a":null,"b":8,"c":"x"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
