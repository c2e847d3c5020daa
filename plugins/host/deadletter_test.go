package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/pipeline"
)

// readEnvelopes returns the dead letters of a dead-letter file.
func readEnvelopes(t *testing.T, path string) []pipeline.Envelope {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("dead-letter file: %v", err)
	}
	defer f.Close()
	var out []pipeline.Envelope
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e pipeline.Envelope
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("dead letter %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// TestPostgresSinkDeadLetters: a postgres sink with a unique constraint
// writes every good record of 10,000 and refuses the 10 duplicates and the
// values its columns cannot hold, one by one, while the rest keep their
// COPY stream; through plugin processes, piped and relayed.
func TestPostgresSinkDeadLetters(t *testing.T) {
	url := testpg.Database(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	dups, bad := map[int]bool{}, map[int]bool{}
	for i := range 10000 {
		id, amount := i, fmt.Sprintf("%q", fmt.Sprint(i%100, ".5"))
		switch {
		case i%1000 == 999:
			id = i - 500 // a duplicate of an earlier key
			dups[i] = true
		case i%2500 == 7:
			amount = `"n/a"` // a value the numeric column cannot hold
			bad[i] = true
		}
		fmt.Fprintf(&b, `{"id":%d,"amount":%s,"note":"row %d"}`+"\n", id, amount, i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	for mode, conns := range map[string]pipeline.Connectors{"pipe": h, "relay": relayOnly{h}} {
		t.Run(mode, func(t *testing.T) {
			table := "dlq_" + mode
			if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, amount numeric, note text)", table)); err != nil {
				t.Fatal(err)
			}
			dlq := filepath.Join(dir, mode, "dead.jsonl")
			p := plan(pipeline.Invocation{RowID: "default",
				Source: cfg("jsonl", map[string]any{"path": in}),
				Sink:   cfg("postgres", map[string]any{"url": url, "table": table}),
			})
			p.Name = "dlq-test"
			p.DeadLetter = &pipeline.DeadLetter{Path: dlq, MaxRowAttempts: 3, Action: pipeline.PoisonDLQ}
			var outputs []pipeline.OutputFile
			res, err := pipeline.Execute(ctx, p, pipeline.ExecuteOptions{Connectors: conns, RunID: "run-1",
				Output: func(_ string, f pipeline.OutputFile) { outputs = append(outputs, f) }})
			if err != nil {
				t.Fatal(err)
			}
			wantBad := len(dups) + len(bad)
			if res[0].RecordsWritten != int64(10000-wantBad) || res[0].RecordsDeadLettered != int64(wantBad) {
				t.Fatalf("result %+v, want %d written and %d dead-lettered", res[0], 10000-wantBad, wantBad)
			}
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 10000-wantBad {
				t.Fatalf("the table holds %d rows (%v), want %d", n, err, 10000-wantBad)
			}
			letters := readEnvelopes(t, dlq)
			var notes []string
			for _, e := range letters {
				var rec struct {
					Note string `json:"note"`
				}
				if err := json.Unmarshal(e.Payload, &rec); err != nil {
					t.Fatal(err)
				}
				notes = append(notes, rec.Note)
				var i int
				fmt.Sscanf(rec.Note, "row %d", &i)
				switch {
				case dups[i]:
					// A duplicate key fails every try: it is tried once.
					if !strings.Contains(e.Error.Message, "duplicate key value violates unique constraint") || e.Attempt != 1 {
						t.Errorf("dead letter of a duplicate: %+v", e)
					}
				case bad[i]:
					if !strings.Contains(e.Error.Message, `invalid input syntax for type numeric: "n/a"`) || e.Attempt != 1 {
						t.Errorf("dead letter of a bad value: %+v", e)
					}
				default:
					t.Errorf("a good record was dead-lettered: %+v", e)
				}
				if e.Connector != "postgres" || e.Sink != "postgres" || e.RunID != "run-1" || e.Pipeline != "dlq-test" || e.Row != "default" ||
					e.Reason != pipeline.ReasonPartial || e.TsMS == 0 || e.Error.Kind != "Sink" {
					t.Errorf("dead letter fields: %+v", e)
				}
			}
			if len(letters) != wantBad {
				t.Fatalf("%d dead letters, want %d: %v", len(letters), wantBad, notes)
			}
			if !slices.ContainsFunc(outputs, func(o pipeline.OutputFile) bool { return o.Path == dlq }) {
				t.Errorf("the dead-letter file is not among the outputs: %+v", outputs)
			}
			if entries, _ := os.ReadDir(filepath.Dir(dlq)); len(entries) != 1 {
				t.Errorf("files beside the dead-letter file: %v", entries)
			}
		})
	}
}

// TestPostgresUpsertDeadLetters: an upsert writes each batch through a
// staging table; a batch the server refuses (a check constraint) is halved
// until the refused records stand alone, and a value its column cannot
// hold is refused before the server sees it; the rest is written.
func TestPostgresUpsertDeadLetters(t *testing.T) {
	url := testpg.Database(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE dlq_upsert (id bigint PRIMARY KEY, amount numeric CHECK (amount >= 0), note text)"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	negative, bad := map[int]bool{}, map[int]bool{}
	for i := range 2000 {
		amount := fmt.Sprintf("%q", fmt.Sprint(i%100, ".5"))
		switch {
		case i%400 == 11:
			amount = `"-1"` // the server's check refuses it
			negative[i] = true
		case i%500 == 3:
			amount = `"n/a"`
			bad[i] = true
		}
		fmt.Fprintf(&b, `{"id":%d,"amount":%s,"note":"row %d"}`+"\n", i, amount, i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dlq := filepath.Join(dir, "dead.jsonl")
	p := plan(pipeline.Invocation{RowID: "default",
		Source: cfg("jsonl", map[string]any{"path": in}),
		Sink:   cfg("postgres", map[string]any{"url": url, "table": "dlq_upsert", "write_mode": "upsert", "key": []string{"id"}}),
	})
	p.DeadLetter = &pipeline.DeadLetter{Path: dlq, MaxRowAttempts: 2, Action: pipeline.PoisonDLQ}
	res, err := pipeline.Execute(ctx, p, pipeline.ExecuteOptions{Connectors: newHost(t), RunID: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	wantBad := len(negative) + len(bad)
	if res[0].RecordsWritten != int64(2000-wantBad) || res[0].RecordsDeadLettered != int64(wantBad) {
		t.Fatalf("result %+v, want %d written and %d dead-lettered", res[0], 2000-wantBad, wantBad)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM dlq_upsert").Scan(&n); err != nil || n != 2000-wantBad {
		t.Fatalf("the table holds %d rows (%v), want %d", n, err, 2000-wantBad)
	}
	letters := readEnvelopes(t, dlq)
	if len(letters) != wantBad {
		t.Fatalf("%d dead letters, want %d", len(letters), wantBad)
	}
	for _, e := range letters {
		var rec struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal(e.Payload, &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case negative[rec.ID]:
			if !strings.Contains(e.Error.Message, "violates check constraint") || e.Attempt != 2 {
				t.Errorf("dead letter of a refused amount: %+v", e)
			}
		case bad[rec.ID]:
			// Found in a part, it is retried as the server's refusals are.
			if !strings.Contains(e.Error.Message, `invalid input syntax for type numeric: "n/a"`) || e.Attempt != 2 {
				t.Errorf("dead letter of a bad value: %+v", e)
			}
		default:
			t.Errorf("a good record was dead-lettered: %+v", e)
		}
	}
}

// TestSQLiteSinkDeadLetters: the sqlite sink isolates the records its table
// refuses with savepoints, splitting each batch around them.
func TestSQLiteSinkDeadLetters(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "out.db")
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range 3000 {
		id := i
		if i%1000 == 10 {
			id = i - 5
		}
		fmt.Fprintf(&b, `{"id":%d,"n":%d}`+"\n", id, i)
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	// The table the sink creates takes key as its primary key.
	p := plan(pipeline.Invocation{RowID: "default",
		Source: cfg("jsonl", map[string]any{"path": in}),
		Sink:   cfg("sqlite", map[string]any{"path": db, "table": "t", "key": []string{"id"}}),
	})
	p.DeadLetter = &pipeline.DeadLetter{Path: filepath.Join(dir, "dead.jsonl"), MaxRowAttempts: 1, Action: pipeline.PoisonDLQ}
	res, err := pipeline.Execute(context.Background(), p, pipeline.ExecuteOptions{Connectors: h})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].RecordsWritten != 2997 || res[0].RecordsDeadLettered != 3 {
		t.Fatalf("result %+v, want 2997 written and 3 dead-lettered", res[0])
	}
	letters := readEnvelopes(t, filepath.Join(dir, "dead.jsonl"))
	if len(letters) != 3 || !strings.Contains(letters[0].Error.Message, "UNIQUE constraint failed") {
		t.Fatalf("dead letters: %+v", letters)
	}
}
