package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// Parallel shards on one faucet serve outside a cluster: a run with
// shard: {count: 2} is split into shard rows this server claims and executes
// in its own slots, leaving the records a cluster would. What the sinks
// received is read back from Postgres and compared, row by row, with the
// source.

// shardRows is the size of the sharded runs' sources: enough for each
// source to split in two, small enough to keep the suite quick.
const shardRows = 20_000

// startLocal starts a server outside a cluster with short leases and polls,
// so a crashed server's shards are reclaimed in seconds.
func startLocal(t *testing.T, hist, dataDir string, args ...string) *server {
	t.Helper()
	return start(t, serverOpts{history: hist, dataDir: dataDir, bin: fastBin,
		args: append([]string{"--lease-ttl-secs", clusterLease, "--cluster-poll-secs", clusterPoll}, args...)})
}

// pgRows reads a query's rows, each as its columns' text joined by "|".
func pgRows(t *testing.T, url, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameRows fails t unless got and want hold the same rows in the same order.
func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: the sink holds %d rows, the source %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: row %d is %q in the sink, %q in the source", what, i, got[i], want[i])
		}
	}
}

// awaitShardedRun waits for a run to end with status want and checks the
// records of a run split into two shards on one server: the parent's
// records_written the sum of its shards', each shard executed by the one
// server, every shard with status shard.
func awaitShardedRun(t *testing.T, s *server, id string, want client.RunStatus, shard client.ShardStatus) client.RunRecord {
	t.Helper()
	rec := s.await(id, want)
	shards := runShards(t, s, id)
	if len(shards) != 2 {
		t.Fatalf("run %s has shards %+v, want 2", id, shards)
	}
	var sum int64
	for _, sh := range shards {
		if sh.Status != shard || sh.Owner == nil || *sh.Owner != *shards[0].Owner {
			t.Fatalf("run %s: shard %+v, want %s on the one server", id, sh, shard)
		}
		sum += sh.RecordsWritten
	}
	if rec.RecordsWritten != sum {
		t.Fatalf("run %s wrote %d records, its shards %d", id, rec.RecordsWritten, sum)
	}
	return rec
}

func TestServeShardsARunOnOneServer(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		data := testpg.Database(t)
		csvPath := filepath.Join(t.TempDir(), "people.csv")
		var csv strings.Builder
		csv.WriteString("id,name\n")
		for i := 1; i <= shardRows; i++ {
			fmt.Fprintf(&csv, "%d,\"name, %d\"\n", i, i)
		}
		if err := os.WriteFile(csvPath, []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			"CREATE TABLE src (id bigint PRIMARY KEY, name text, amount numeric)",
			fmt.Sprintf("INSERT INTO src SELECT i, 'name ' || i, i / 7.0 FROM generate_series(1, %d) i", shardRows),
			"CREATE TABLE pg_dst (LIKE src)",
			"CREATE TABLE csv_dst (id text, name text)",
			// Only the first half of the keys fit: the shard of the second
			// half fails.
			fmt.Sprintf("CREATE TABLE half_dst (LIKE src, CHECK (id <= %d))", shardRows/2),
		} {
			if err := execSQL(data, stmt); err != nil {
				t.Fatal(err)
			}
		}
		s := startLocal(t, h.url(t), "")
		sharded := func(source, table string) string {
			return fmt.Sprintf("version: 1\nname: sharded\nshard: {count: 2}\npipeline:\n  source: %s\n  sink: {type: postgres, config: {url: %q, table: %s}}\n", source, data, table)
		}
		pgSource := fmt.Sprintf("{type: postgres, config: {url: %q, table: src}}", data)

		res := s.submit(client.SubmitRequest{Config: sharded(fmt.Sprintf("{type: csv, config: {path: %q}}", csvPath), "csv_dst")})
		if res.Warnings != nil && strings.Contains(strings.Join(*res.Warnings, "\n"), "executes whole") {
			t.Fatalf("a shardable run outside a cluster was told it executes whole: %q", *res.Warnings)
		}
		if rec := awaitShardedRun(t, s, res.RunId, client.RunStatusCompleted, client.ShardStatusCompleted); rec.RecordsWritten != shardRows {
			t.Fatalf("CSV → Postgres wrote %d records, want %d", rec.RecordsWritten, shardRows)
		}
		want := make([]string, shardRows)
		for i := range want {
			want[i] = fmt.Sprintf("%d|name, %d", i+1, i+1)
		}
		sameRows(t, "CSV → Postgres", pgRows(t, data, "SELECT id, name FROM csv_dst ORDER BY id::bigint"), want)

		// Shards appending to one file would share it, and one that failed
		// would truncate the others' lines away: such a run executes whole,
		// and the submit says why.
		out := filepath.Join(filepath.Dir(csvPath), "people.jsonl")
		res = s.submit(client.SubmitRequest{Config: fmt.Sprintf("version: 1\nshard: {count: 2}\npipeline:\n  source: {type: csv, config: {path: %q}}\n  sink: {type: jsonl, config: {path: %q, write_mode: append}}\n", csvPath, out)})
		if res.Warnings == nil || !strings.Contains(strings.Join(*res.Warnings, "\n"), "sink jsonl does not commit and abort concurrent sessions on their own") {
			t.Fatalf("a sharded run into an appended file was not told it executes whole: %v", res.Warnings)
		}
		if rec := s.await(res.RunId, client.RunStatusCompleted); rec.RecordsWritten != shardRows {
			t.Fatalf("CSV → appended JSON Lines wrote %d records, want %d", rec.RecordsWritten, shardRows)
		}
		if sh := runShards(t, s, res.RunId); len(sh) != 0 {
			t.Fatalf("the whole run has shards %+v", sh)
		}
		written, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(written), "\n"); lines != shardRows {
			t.Fatalf("the appended file holds %d lines, want %d", lines, shardRows)
		}

		id := s.submit(client.SubmitRequest{Config: sharded(pgSource, "pg_dst")}).RunId
		if rec := awaitShardedRun(t, s, id, client.RunStatusCompleted, client.ShardStatusCompleted); rec.RecordsWritten != shardRows {
			t.Fatalf("Postgres → Postgres wrote %d records, want %d", rec.RecordsWritten, shardRows)
		}
		sameRows(t, "Postgres → Postgres", pgRows(t, data, "SELECT * FROM pg_dst ORDER BY id"), pgRows(t, data, "SELECT * FROM src ORDER BY id"))
		// The catalog records the run once, from its shards, as in a cluster.
		pg, _ := url.Parse(data)
		d := awaitDataset(t, s, "postgres://"+pg.Host+pg.Path+"/public.pg_dst", 1)
		if d.TotalRecords != shardRows || len(d.Stats) != 1 || d.Stats[0].RunId != id || len(d.Upstream) != 1 || d.Upstream[0].LastRecords != shardRows {
			t.Errorf("the sharded run's catalog record: %d records, stats %+v, upstream %+v", d.TotalRecords, d.Stats, d.Upstream)
		}

		// A shard that fails fails the run, with the cluster's error text.
		id = s.submit(client.SubmitRequest{Config: sharded(pgSource, "half_dst")}).RunId
		rec := s.await(id, client.RunStatusFailed)
		if rec.Error == nil || *rec.Error != "1/2 shard(s) failed" {
			t.Fatalf("the run of a failed shard ended %+v (error %s)", rec, deref(rec.Error))
		}
		var failed int
		for _, sh := range runShards(t, s, id) {
			if sh.Status == client.ShardStatusFailed {
				failed++
				if sh.Error == nil || !strings.Contains(*sh.Error, "half_dst") {
					t.Fatalf("failed shard %+v does not say why", sh)
				}
			}
		}
		if failed != 1 {
			t.Fatalf("%d shards failed, want the second half's", failed)
		}
	})
}

func TestServeCancelStopsEveryShard(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		rcv := newReceiver(t)
		rcv.up()
		s := startLocal(t, h.url(t), "", "--callback-allow-host", "127.0.0.1", "--callback-secret", callbackSecret)
		// Far more rows than the test waits for: the shards run until
		// cancelled.
		spec := client.CallbackSpec{Url: rcv.url("/hook")}
		id := s.submit(client.SubmitRequest{Config: shardedGenerate(2_000_000_000, 2, "{type: stdout, config: {}}"), Callback: &spec}).RunId
		s.awaitMetric("faucet_cluster_shards_in_flight", nil, "2", func(v float64) bool { return v == 2 })
		// The run's live count is its shards' sum: wait until they wrote.
		testwait.Until(t, time.Minute, func() error {
			if rec := s.get(id); rec.Status != client.RunStatusSharded || rec.RecordsWritten == 0 {
				return fmt.Errorf("run %s is %s with %d records, want sharded and writing", id, rec.Status, rec.RecordsWritten)
			}
			return nil
		})
		if resp, err := s.admin().CancelRunWithResponse(context.Background(), id); err != nil || resp.StatusCode() != 202 {
			t.Fatalf("cancel: %v %s", err, resp.Body)
		}
		rec := awaitShardedRun(t, s, id, client.RunStatusCancelled, client.ShardStatusCancelled)
		if rec.RecordsWritten == 0 {
			t.Fatalf("cancelled run = %+v: the shards it stopped wrote nothing", rec)
		}
		s.awaitMetric("faucet_cluster_shards_in_flight", nil, "0", func(v float64) bool { return v == 0 })
		// The run calls back once, with its status; its shards do not.
		checkSent(t, rcv.await(s, id), delivery(t, s, id), id, client.RunStatusCancelled)
		awaitDelivery(t, s, id, func(d client.CallbackDelivery) bool { return d.State == client.CallbackStateDelivered })
		if n := len(rcv.of(id)); n != 1 {
			t.Fatalf("the cancelled sharded run called back %d times, want once", n)
		}
	})
}

// TestServeResumesTheShardsOfAKilledServer: a server killed with SIGKILL
// while it executes shards leaves them running under its lease; the next
// server on the history reclaims them once the lease lapsed, executes them
// again and completes the run, and the keyed sink holds every row once.
func TestServeResumesTheShardsOfAKilledServer(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		sinkDB := testpg.Database(t)
		if err := execSQL(sinkDB, `CREATE TABLE people (
			id bigint PRIMARY KEY, first_name text, country text, amount numeric,
			created_at timestamptz, active boolean, attributes jsonb)`); err != nil {
			t.Fatal(err)
		}
		hist, dataDir := h.url(t), t.TempDir()
		first := startLocal(t, hist, dataDir)
		const rows = 400_000
		sink := fmt.Sprintf("{type: postgres, config: {url: %q, table: people, write_mode: upsert, key: [id]}}", sinkDB)
		id := first.submit(client.SubmitRequest{Config: shardedGenerate(rows, 2, sink)}).RunId
		first.awaitMetric("faucet_cluster_shards_in_flight", nil, "2", func(v float64) bool { return v == 2 })
		if err := first.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-first.exited
		next := startLocal(t, hist, dataDir)
		rec := next.await(id, client.RunStatusCompleted, client.RunStatusFailed, client.RunStatusCancelled)
		if rec.Status != client.RunStatusCompleted || rec.RecordsWritten != rows {
			t.Fatalf("the resumed run ended %+v (error %s), want completed with %d records", rec, deref(rec.Error), rows)
		}
		resumed := 0
		for _, sh := range runShards(t, next, id) {
			if sh.Status != client.ShardStatusCompleted {
				t.Fatalf("shard %+v did not complete", sh)
			}
			if sh.Attempt > 0 {
				resumed++
			}
		}
		if resumed == 0 {
			t.Fatal("no shard of the killed server was executed again")
		}
		if n := next.metric("faucet_cluster_reclaims_total", map[string]string{"kind": "shard"}); n < 1 {
			t.Fatalf("the next server counted %v shard reclaims, want at least 1", n)
		}
		count, distinct, err := countKeys(sinkDB)
		if err != nil {
			t.Fatal(err)
		}
		if count != rows || distinct != rows {
			t.Fatalf("the sink holds %d rows with %d distinct keys, want %d of each", count, distinct, rows)
		}
		testwait.Until(t, 30*time.Second, func() error {
			if v := next.metric("faucet_cluster_shards_in_flight", nil); v != 0 {
				return fmt.Errorf("%v shards still in flight", v)
			}
			return nil
		})
	})
}
