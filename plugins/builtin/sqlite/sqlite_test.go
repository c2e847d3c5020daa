package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/builtin/internal/tabular/tabulartest"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

var (
	batchOf = tabulartest.Batch
	decoded = tabulartest.Decoded
)

func write(t *testing.T, config string, abort bool, batches ...sdk.Batch) error {
	t.Helper()
	return tabulartest.Write(t, Connector{}, config, abort, batches...)
}

func read(t *testing.T, config string, shard *sdk.Shard) ([]string, error) {
	t.Helper()
	return tabulartest.Read(t, Connector{}, config, shard)
}

func mustRead(t *testing.T, config string) []string {
	t.Helper()
	return tabulartest.MustRead(t, Connector{}, config)
}

func exec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := open(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func cfg(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func TestSinkCreatesTableAndRoundTrips(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "sub", "out.db")
	var want []string
	var batches []sdk.Batch
	for b := range 3 {
		var recs []string
		for i := range 500 {
			recs = append(recs, string(generate.AppendRow(nil, 7, int64(b*500+i+1))))
		}
		want = append(want, recs...)
		batches = append(batches, batchOf(uint64(b+1), recs...))
	}
	if err := write(t, cfg(`{"path": %q, "table": "people"}`, db), false, batches...); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, cfg(`{"path": %q, "query": "SELECT * FROM people ORDER BY id"}`, db))
	if !reflect.DeepEqual(decoded(t, got), decoded(t, want)) {
		t.Fatalf("round trip differs; first record:\n got %s\nwant %s", got[0], want[0])
	}
	if !strings.Contains(got[0], `"active":true`) && !strings.Contains(got[0], `"active":false`) {
		t.Errorf("booleans must read back as booleans: %s", got[0])
	}
	if !strings.Contains(got[0], `"attributes":{"tier":`) {
		t.Errorf("objects must read back as JSON objects: %s", got[0])
	}
	sdb, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var ddl string
	if err := sdb.QueryRow("SELECT sql FROM sqlite_master WHERE name = 'people'").Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{`"id" INTEGER`, `"first_name" TEXT`, `"amount" REAL`, `"active" BOOLEAN`, `"attributes" JSON`} {
		if !strings.Contains(ddl, col) {
			t.Errorf("created table %q lacks %s", ddl, col)
		}
	}
}

func TestSinkAppendUpsertOverwrite(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "kv.db")
	upsert := cfg(`{"path": %q, "table": "kv", "write_mode": "upsert", "key": ["k"]}`, db)
	if err := write(t, upsert, false, batchOf(1, `{"k":"a","v":1}`, `{"k":"b","v":2}`)); err != nil {
		t.Fatal(err)
	}
	err := write(t, upsert, false,
		batchOf(1, `{"k":"b","v":20}`, `{"k":"c","v":3}`, `{"k":"c","v":30}`),
		batchOf(2, `{"k":"d"}`))
	if err != nil {
		t.Fatal(err)
	}
	all := cfg(`{"path": %q, "query": "SELECT k, v FROM kv ORDER BY k"}`, db)
	want := []string{`{"k":"a","v":1}`, `{"k":"b","v":20}`, `{"k":"c","v":30}`, `{"k":"d","v":null}`}
	if got := mustRead(t, all); !slices.Equal(got, want) {
		t.Errorf("after upsert: %v, want %v", got, want)
	}

	if err := write(t, cfg(`{"path": %q, "table": "kv"}`, db), false, batchOf(1, `{"k":"e","v":5}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, all); len(got) != 5 {
		t.Errorf("append added %d rows, want 1: %v", len(got)-4, got)
	}
	err = write(t, cfg(`{"path": %q, "table": "kv"}`, db), false, batchOf(1, `{"k":"a","v":9}`))
	if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("append of an existing key into a keyed table: %v", err)
	}

	overwrite := cfg(`{"path": %q, "table": "kv", "write_mode": "overwrite"}`, db)
	if err := write(t, overwrite, true, batchOf(1, `{"k":"z","v":0}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, all); len(got) != 5 {
		t.Errorf("an aborted overwrite changed the table: %v", got)
	}
	if err := write(t, overwrite, false, batchOf(1, `{"k":"z","v":0}`), batchOf(2, `{"k":"y"}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, all); !slices.Equal(got, []string{`{"k":"y","v":null}`, `{"k":"z","v":0}`}) {
		t.Errorf("after overwrite: %v", got)
	}
}

func TestSinkCommitsExactlyTheAcknowledgedBatches(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "ack.db")
	config := cfg(`{"path": %q, "table": "t"}`, db)
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
	// A cancelled run closes the session after the batches it acknowledged.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Close(cancelled); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cfg(`{"path": %q, "table": "t"}`, db)); len(got) != 3 {
		t.Errorf("committed %v, want the 3 acknowledged batches", got)
	}

	// A batch that fails part-way is not acknowledged, and the session that
	// saw it aborts: nothing of it stays.
	err = write(t, config, false, batchOf(1, `{"n":4}`), batchOf(2, `{"n":5}`, `{"nope":1}`))
	if err == nil || !strings.Contains(err.Error(), `record 2: field "nope" is not a column of table t`) {
		t.Fatalf("unknown column: %v", err)
	}
	if got := mustRead(t, cfg(`{"path": %q, "table": "t"}`, db)); len(got) != 3 {
		t.Errorf("a failed session left rows behind: %v", got)
	}
}

func TestSinkErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "e.db")
	exec(t, db, "CREATE TABLE plain (k TEXT, v INTEGER)")
	cases := []struct {
		config string
		batch  sdk.Batch
		msg    string
	}{
		{cfg(`{"path": %q, "table": "plain", "write_mode": "upsert", "key": ["k"]}`, db), batchOf(1, `{"k":"a"}`), "needs a primary key or unique index on k"},
		{cfg(`{"path": %q, "table": "plain", "key": ["id"]}`, db), batchOf(1, `{"k":"a"}`), `key column "id" is not a column of table plain`},
		{cfg(`{"path": %q, "table": "fresh", "write_mode": "upsert", "key": ["id"]}`, db), batchOf(1, `{"k":"a"}`), `key column "id" is not a column of table fresh`},
		{cfg(`{"path": %q, "table": "plain"}`, db), batchOf(1, `{"k":"a","v":1}`, `[1]`), "record 2: record is not a JSON object"},
	}
	for _, tc := range cases {
		err := write(t, tc.config, false, tc.batch)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.config, err, tc.msg)
		}
	}
}

func TestSourceTypesAndQueries(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "src.db")
	exec(t, db,
		`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT, score REAL, ok BOOLEAN, doc JSON, raw BLOB, note TEXT)`,
		`INSERT INTO things VALUES (1, 'tab	"quote"', 1.5, 1, '{"a":[1,2]}', x'00ff', NULL)`,
		`INSERT INTO things VALUES (2, 'ünï', 2, 0, 'not json', NULL, '{"looks":"like json"}')`,
	)
	got := mustRead(t, cfg(`{"path": %q, "table": "things"}`, db))
	want := []string{
		`{"id":1,"name":"tab\t\"quote\"","score":1.5,"ok":true,"doc":{"a":[1,2]},"raw":"AP8=","note":null}`,
		`{"id":2,"name":"ünï","score":2,"ok":false,"doc":"not json","raw":null,"note":"{\"looks\":\"like json\"}"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("read:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = mustRead(t, cfg(`{"path": %q, "query": "SELECT id * 10 AS x FROM things WHERE ok;"}`, db))
	if !slices.Equal(got, []string{`{"x":10}`}) {
		t.Errorf("query: %v", got)
	}

	_, err := read(t, cfg(`{"path": %q, "table": "things"}`, filepath.Join(t.TempDir(), "missing.db")), nil)
	if err == nil || !strings.Contains(err.Error(), "missing.db") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing database: %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(t.TempDir(), "missing.db")); statErr == nil {
		t.Error("reading a missing database created it")
	}
	_, err = read(t, cfg(`{"path": %q, "table": "nope"}`, db), nil)
	if err == nil || !strings.Contains(err.Error(), "no such table: nope") {
		t.Errorf("missing table: %v", err)
	}
}

func TestShardsUnionEqualsUnshardedRead(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "shards.db")
	stmts := []string{
		"CREATE TABLE pk (id INTEGER PRIMARY KEY, v TEXT)",
		"CREATE TABLE norowid (code TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID",
		"CREATE TABLE heap (v TEXT, grp INTEGER)",
	}
	for i := 1; i <= 1000; i++ {
		// Gaps in the ids, repeated and missing group values.
		stmts = append(stmts,
			fmt.Sprintf("INSERT INTO pk VALUES (%d, 'v%d')", i*i, i),
			fmt.Sprintf("INSERT INTO norowid VALUES ('c%04d', %d)", i, i),
			fmt.Sprintf("INSERT INTO heap VALUES ('h%d', %s)", i, map[bool]string{true: "NULL", false: fmt.Sprint(i % 7)}[i%10 == 0]))
	}
	exec(t, db, "BEGIN;\n"+strings.Join(stmts, ";\n")+";\nCOMMIT")
	configs := []string{
		cfg(`{"path": %q, "table": "pk"}`, db),
		cfg(`{"path": %q, "table": "norowid"}`, db),
		cfg(`{"path": %q, "table": "heap"}`, db),
		cfg(`{"path": %q, "query": "SELECT v, grp FROM heap", "key": "grp"}`, db),
	}
	for _, config := range configs {
		tabulartest.CheckShards(t, Connector{}, config, 1, 2, 3, 8, 5000)
	}
	_, shards := tabulartest.ShardUnion(t, Connector{}, configs[0], 4)
	if len(shards) != 4 {
		t.Errorf("4 shards of 1000 distinct keys: got %d", len(shards))
	}
	_, shards = tabulartest.ShardUnion(t, Connector{}, configs[3], 20)
	if len(shards) > 8 {
		t.Errorf("a key with 7 distinct values gives at most 8 shards, got %d", len(shards))
	}
	_, err := Connector{}.Shards(context.Background(), json.RawMessage(cfg(`{"path": %q, "query": "SELECT 1"}`, db)), 2)
	if err == nil || !strings.Contains(err.Error(), "needs key") {
		t.Errorf("sharding a query without key: %v", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "check.db")
	exec(t, db, "CREATE TABLE t (a INTEGER)")
	items, err := Connector{}.Check(context.Background(), sdk.RoleSource, json.RawMessage(cfg(`{"path": %q, "table": "t"}`, db)))
	if err != nil || len(items) != 2 || !items[0].OK || !items[1].OK {
		t.Errorf("source check: %+v %v", items, err)
	}
	items, err = Connector{}.Check(context.Background(), sdk.RoleSource, json.RawMessage(cfg(`{"path": %q, "table": "nope"}`, db)))
	if err != nil || len(items) != 2 || items[1].OK || !strings.Contains(items[1].Message, "no such table") {
		t.Errorf("source check of a missing table: %+v %v", items, err)
	}
	items, err = Connector{}.Check(context.Background(), sdk.RoleSink, json.RawMessage(cfg(`{"path": %q, "table": "t", "key": ["b"]}`, db)))
	if err != nil || items[1].OK || !strings.Contains(items[1].Message, `key column "b"`) {
		t.Errorf("sink check with a bad key: %+v %v", items, err)
	}
}
