package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// openDriver opens the driver of a fresh, migrated SQLite file.
func openDriver(t *testing.T) *driver {
	t.Helper()
	ctx := context.Background()
	target, err := resolve(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, target); err != nil {
		t.Fatal(err)
	}
	d, err := connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func auditRow(id string) dbsqlc.AuditInsertParams {
	return dbsqlc.AuditInsertParams{ID: id, Ts: micros(time.Now()), Principal: "p", Role: "admin", Action: "test", Result: "ok"}
}

// committed lists the audit ids a reader sees, i.e. those committed.
func committed(t *testing.T, s *driver) map[string]bool {
	t.Helper()
	entries, err := s.AuditList(context.Background(), &db.AuditListParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range entries {
		ids[e.ID] = true
	}
	return ids
}

// writeModes are the batcher's ways of sharing a transaction: a savepoint
// per write, or none until a write fails (replayable writes).
var writeModes = []struct {
	name string
	mode writeMode
}{{"savepoints", 0}, {"replayable", replayable}, {"patient", patient | replayable}}

// TestBatchedWritesFailAlone runs writes in one shared transaction: each
// sees none of the others committed yet (they share the commit), a write
// that fails after its first statement leaves nothing behind, and the
// others commit, whether they had savepoints from the start or ran again
// with them once one failed.
func TestBatchedWritesFailAlone(t *testing.T) {
	for _, m := range writeModes {
		t.Run(m.name, func(t *testing.T) { testBatchedWritesFailAlone(t, m.mode) })
	}
}

func testBatchedWritesFailAlone(t *testing.T, mode writeMode) {
	s := openDriver(t)
	const n = 9
	reqs := make([]*writeReq, n)
	seen := make([]int, n)
	for i := range reqs {
		id := fmt.Sprintf("w%d", i)
		fn := func(ctx context.Context, q *dbsqlc.Queries) error {
			seen[i] = len(committed(t, s))
			if err := q.AuditInsert(ctx, auditRow(id)); err != nil {
				return err
			}
			if i%3 == 1 {
				// The same id again: the primary key refuses it.
				return q.AuditInsert(ctx, auditRow(id))
			}
			return nil
		}
		reqs[i] = &writeReq{ctx: context.Background(), fn: fn, mode: mode, done: make(chan error, 1)}
	}
	// A write whose caller gave up before it was taken never runs.
	abandonedReq := &writeReq{ctx: context.Background(), mode: mode, done: make(chan error, 1), fn: func(ctx context.Context, q *dbsqlc.Queries) error {
		return q.AuditInsert(ctx, auditRow("abandoned"))
	}}
	abandonedReq.state.Store(abandoned)

	tx, err := s.w.BeginTx(context.Background(), nil)
	s.batches.commit(tx, err, append(reqs, abandonedReq))

	got := committed(t, s)
	for i, r := range reqs {
		err := <-r.done
		id := fmt.Sprintf("w%d", i)
		if seen[i] != 0 {
			t.Errorf("write %d saw %d committed rows: the writes did not share one transaction", i, seen[i])
		}
		if i%3 == 1 {
			if err == nil || got[id] {
				t.Errorf("failing write %d: error %v, committed %v; want an error and nothing committed", i, err, got[id])
			}
			continue
		}
		if err != nil || !got[id] {
			t.Errorf("write %d: error %v, committed %v; want it committed", i, err, got[id])
		}
	}
	if got["abandoned"] || len(abandonedReq.done) != 0 {
		t.Error("the abandoned write ran")
	}
}

// TestReplayableWritesRunOnce: replayable writes that all succeed share one
// transaction with no savepoints, each body run once.
func TestReplayableWritesRunOnce(t *testing.T) {
	s := openDriver(t)
	const n = 5
	reqs := make([]*writeReq, n)
	runs := make([]int, n)
	for i := range reqs {
		id := fmt.Sprintf("r%d", i)
		reqs[i] = &writeReq{ctx: context.Background(), mode: replayable, done: make(chan error, 1), fn: func(ctx context.Context, q *dbsqlc.Queries) error {
			runs[i]++
			if len(committed(t, s)) != 0 {
				t.Errorf("write %d saw rows committed: the writes did not share one transaction", i)
			}
			return q.AuditInsert(ctx, auditRow(id))
		}}
	}
	tx, err := s.w.BeginTx(context.Background(), nil)
	s.batches.commit(tx, err, reqs)
	got := committed(t, s)
	for i, r := range reqs {
		if err := <-r.done; err != nil || !got[fmt.Sprintf("r%d", i)] || runs[i] != 1 {
			t.Errorf("write %d: error %v, committed %v, ran %d times; want committed, once", i, err, got[fmt.Sprintf("r%d", i)], runs[i])
		}
	}
}

// TestConcurrentWritesAllCommit hammers the store with writes from many
// goroutines, some failing, some cancelled: every write that reports success
// is committed, every failed or cancelled one is absent.
func TestConcurrentWritesAllCommit(t *testing.T) {
	for _, m := range writeModes {
		t.Run(m.name, func(t *testing.T) { testConcurrentWritesAllCommit(t, m.mode) })
	}
}

func testConcurrentWritesAllCommit(t *testing.T, mode writeMode) {
	s := openDriver(t)
	const n = 200
	type outcome struct {
		id  string
		err error
	}
	results := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("c%03d", i)
			ctx := context.Background()
			if i%10 == 7 {
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			}
			err := s.batches.do(ctx, mode, func(ctx context.Context, q *dbsqlc.Queries) error {
				if err := q.AuditInsert(ctx, auditRow(id)); err != nil {
					return err
				}
				if i%10 == 3 {
					return errors.New("refused")
				}
				return nil
			})
			results[i] = outcome{id, err}
		})
	}
	wg.Wait()
	got := committed(t, s)
	for i, r := range results {
		want := i%10 != 3 && i%10 != 7
		if (r.err == nil) != want || got[r.id] != want {
			t.Errorf("write %d: error %v, committed %v; want success %v", i, r.err, got[r.id], want)
		}
	}
}

func TestWriteAfterClose(t *testing.T) {
	s := openDriver(t)
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.AuditInsert(ctx, &db.AuditEntry{ID: "late", Timestamp: time.Now(), Principal: "p", Role: "admin", Action: "test", Result: "ok"})
	if !errors.Is(err, errClosed) {
		t.Errorf("write after close: %v, want %v", err, errClosed)
	}
}

// TestPatientBatchGathersWhileWritesKeepComing: a patient batch takes every
// write that comes within patience of the one before, not just the first,
// and stops at maxPatience; a write that may not wait ends the gathering.
// The patience here is long enough that a loaded machine cannot make the
// writes miss it.
func TestPatientBatchGathersWhileWritesKeepComing(t *testing.T) {
	b := &batcher{queue: make(chan *writeReq), wait: time.NewTimer(time.Hour), patience: 500 * time.Millisecond, maxPatience: time.Hour}
	b.wait.Stop()
	req := func(mode writeMode) *writeReq {
		return &writeReq{ctx: context.Background(), mode: mode, done: make(chan error, 1)}
	}
	send := func(rs ...*writeReq) {
		for _, r := range rs {
			time.Sleep(5 * time.Millisecond)
			b.queue <- r
		}
	}

	spaced := []*writeReq{req(patient), req(patient), req(patient), req(patient)}
	go send(spaced...)
	if got := b.await([]*writeReq{req(patient)}); len(got) != 5 {
		t.Errorf("patient batch took %d writes, want all 5 (each came 5 ms after the last)", len(got))
	}

	// A write that may not wait ends the batch at once: the one coming
	// 100 ms after it, well within patience, is left for the next batch.
	impatient, later := req(0), req(patient)
	go func() {
		send(req(patient), impatient)
		time.Sleep(100 * time.Millisecond)
		b.queue <- later
	}()
	got := b.await([]*writeReq{req(patient)})
	if len(got) != 3 || got[2] != impatient {
		t.Errorf("patient batch with an impatient write took %d writes, want 3 ending with it", len(got))
	}
	if r := <-b.queue; r != later {
		t.Error("the write after the impatient one was not left queued")
	}

	// maxPatience bounds the gathering even while writes keep coming.
	b.maxPatience = 50 * time.Millisecond
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case b.queue <- req(patient):
			case <-stop:
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	got = b.await([]*writeReq{req(patient)})
	close(stop)
	if len(got) >= maxBatch {
		t.Errorf("patient batch took %d writes: it did not stop at maxPatience", len(got))
	}
}
