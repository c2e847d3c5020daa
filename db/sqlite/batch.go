package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// maxBatch bounds the writes that share one transaction, so a burst holds
// SQLite's write lock (and its callers' answers) only briefly.
const maxBatch = 64

// patience bounds how long a batch of patient writes waits for the next
// write to join it (see writeMode), and maxPatience how long it keeps
// gathering while writes keep coming. Under load another run's end or a
// submit comes within patience, and sharing one commit writes the pages the
// writes share (the newest rows, the ends of the indexes) to the WAL once:
// waiting for one more write halved the commits of a busy server, gathering
// for as long as they keep coming halved them again. Alone, a patient write
// is answered patience later; in a burst, at most maxPatience later.
const (
	patience    = time.Millisecond
	maxPatience = 3 * patience
)

// errClosed answers the writes of a closed store.
var errClosed = errors.New("the run-history store is closed")

// writeFunc is the body of one write: its statements run on q with ctx,
// inside a transaction. It may run alongside other writes in the same
// transaction, so it must use the ctx it is given, never its caller's: a
// cancelled context would interrupt SQLite and roll back every write in the
// transaction.
type writeFunc func(ctx context.Context, q *dbsqlc.Queries) error

// A write request moves from queued to taken when the batcher commits to
// running it; a caller whose context ends while it is still queued abandons
// it, so a write reported cancelled never happens.
const (
	queued int32 = iota
	taken
	abandoned
)

// writeMode says what the batcher may do with a write.
type writeMode uint8

const (
	// single: the write runs exactly one statement, which SQLite makes
	// atomic by itself.
	single writeMode = 1 << iota
	// patient: no one outside the server waits for the write's answer (a
	// run's terminal write, its log lines, the catalog), so it may wait
	// for company before it commits.
	patient
	// replayable: the write's body may run again after its transaction
	// was rolled back, since it only sets what it reports (see together).
	replayable
)

type writeReq struct {
	ctx   context.Context
	fn    writeFunc
	mode  writeMode
	state atomic.Int32
	// done receives the outcome once: nil when the write committed.
	done chan error
}

// batcher carries every write of a store on the writer connection with
// group commit: the writes that queue up while one transaction runs share
// the next one, each under its own savepoint, so a failing write rolls back
// alone. A commit costs SQLite a WAL append of every page it changed and a
// round of shared-memory locks; concurrent writes touch the same few pages
// (the newest rows, the ends of the indexes), so sharing a commit writes
// them once. A lone single-statement write runs on its own, as SQLite's
// implicit transaction.
type batcher struct {
	db    *sql.DB
	stmts *stmtCache
	queue chan *writeReq
	stop  chan struct{}
	done  chan struct{}
	// wait times a patient batch's wait; only the loop uses it.
	wait *time.Timer
	// patience and maxPatience are those constants, but in tests.
	patience, maxPatience time.Duration
}

func newBatcher(db *sql.DB, stmts *stmtCache) *batcher {
	b := &batcher{
		db: db, stmts: stmts, queue: make(chan *writeReq), stop: make(chan struct{}), done: make(chan struct{}),
		wait: time.NewTimer(time.Hour), patience: patience, maxPatience: maxPatience,
	}
	b.wait.Stop()
	go b.loop()
	return b
}

// close stops taking writes once the transaction in progress has ended.
func (b *batcher) close() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
}

// do runs fn as a write and returns once it has committed or failed.
func (b *batcher) do(ctx context.Context, mode writeMode, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, mode: mode, done: make(chan error, 1)}
	select {
	case b.queue <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return errClosed
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		if r.state.CompareAndSwap(queued, abandoned) {
			return ctx.Err()
		}
		return <-r.done
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	for {
		select {
		case r := <-b.queue:
			b.run(r)
		case <-b.stop:
			return
		}
	}
}

// gather adds the writes queued right now to batch, up to maxBatch.
func (b *batcher) gather(batch []*writeReq) []*writeReq {
	for len(batch) < maxBatch {
		select {
		case r := <-b.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// run runs first and whatever else has queued meanwhile.
func (b *batcher) run(first *writeReq) {
	batch := b.gather([]*writeReq{first})
	if len(batch) == 1 {
		// Callers just answered may be about to write again: let them.
		runtime.Gosched()
		batch = b.gather(batch)
	}
	if len(batch) < maxBatch && allPatient(batch) {
		batch = b.await(batch)
	}
	if len(batch) == 1 && first.mode&single != 0 {
		if first.take() {
			// Alone, the write may be interrupted by its own context.
			first.done <- first.fn(first.ctx, dbsqlc.New(b.stmts))
		}
		return
	}
	// Waiting for SQLite's write lock gathers more writes.
	tx, err := b.db.BeginTx(context.Background(), nil)
	b.commit(tx, err, b.gather(batch))
}

// allPatient reports whether every write of batch may wait.
func allPatient(batch []*writeReq) bool {
	for _, r := range batch {
		if r.mode&patient == 0 {
			return false
		}
	}
	return true
}

// await gathers writes into a patient batch while each comes within
// patience of the last, for at most maxPatience, and ends at once when a
// write that may not wait joins (a submit's answer is never held back).
func (b *batcher) await(batch []*writeReq) []*writeReq {
	deadline := time.Now().Add(b.maxPatience)
	defer b.wait.Stop()
	for len(batch) < maxBatch && allPatient(batch) {
		b.wait.Reset(min(b.patience, time.Until(deadline)))
		select {
		case r := <-b.queue:
			batch = append(batch, r)
		case <-b.wait.C:
			return batch
		case <-b.stop:
			return b.gather(batch)
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	return b.gather(batch)
}

// commit runs batch in tx (begun with err) and commits it; a write whose
// caller gave up meanwhile is left out.
func (b *batcher) commit(tx *sql.Tx, err error, batch []*writeReq) {
	live := batch[:0]
	for _, r := range batch {
		if r.take() {
			live = append(live, r)
		}
	}
	switch {
	case err != nil:
		reply(live, err)
		return
	case len(live) == 0:
		_ = tx.Rollback()
		return
	}
	if len(live) > 1 && allReplayable(live) {
		if b.together(tx, live) {
			return
		}
		// One of them failed, and its transaction is rolled back: run
		// them again, each under its own savepoint, so it fails alone.
		if tx, err = b.db.BeginTx(context.Background(), nil); err != nil {
			reply(live, err)
			return
		}
	}
	b.each(tx, live)
}

// allReplayable reports whether every write of batch may run again.
func allReplayable(batch []*writeReq) bool {
	for _, r := range batch {
		if r.mode&replayable == 0 {
			return false
		}
	}
	return true
}

// together runs every write of live in tx, with no savepoints, and commits
// them. A savepoint costs SQLite two statements and a copy of every page a
// write changes (to roll the write back alone), and writes nearly always
// succeed. When one fails, together rolls tx back, answers no one and
// returns false.
func (b *batcher) together(tx *sql.Tx, live []*writeReq) bool {
	stmts := b.stmts.inTx(tx)
	defer b.stmts.warm(context.Background(), stmts)
	q := dbsqlc.New(stmts)
	for _, r := range live {
		if err := r.fn(context.WithoutCancel(r.ctx), q); err != nil {
			_ = tx.Rollback()
			return false
		}
	}
	reply(live, tx.Commit())
	return true
}

// each runs live in tx, one savepoint per write unless it is alone, and
// commits what succeeded.
func (b *batcher) each(tx *sql.Tx, live []*writeReq) {
	stmts := b.stmts.inTx(tx)
	defer b.stmts.warm(context.Background(), stmts)
	q := dbsqlc.New(stmts)
	if len(live) == 1 {
		r := live[0]
		if err := r.fn(context.WithoutCancel(r.ctx), q); err != nil {
			_ = tx.Rollback()
			r.done <- err
			return
		}
		r.done <- tx.Commit()
		return
	}
	var ok []*writeReq
	for i, r := range live {
		err := savepoint(stmts, r, q)
		var broken *brokenTx
		if errors.As(err, &broken) {
			_ = tx.Rollback()
			r.done <- broken.err
			lost := fmt.Errorf("a write sharing the transaction failed it: %w", broken.err)
			reply(ok, lost)
			reply(live[i+1:], lost)
			return
		}
		if err != nil {
			r.done <- err
			continue
		}
		ok = append(ok, r)
	}
	reply(ok, tx.Commit())
}

// brokenTx is a failure that ended the whole transaction, not just one
// write's savepoint.
type brokenTx struct{ err error }

func (e *brokenTx) Error() string { return e.err.Error() }

// savepoint runs r under a savepoint and rolls it back alone if it fails.
// The savepoint statements are prepared once, like the queries.
func savepoint(tx *txStmts, r *writeReq, q *dbsqlc.Queries) error {
	ctx := context.WithoutCancel(r.ctx)
	if _, err := tx.ExecContext(ctx, "SAVEPOINT write"); err != nil {
		return &brokenTx{err}
	}
	err := r.fn(ctx, q)
	if err == nil {
		if _, rerr := tx.ExecContext(ctx, "RELEASE write"); rerr != nil {
			return &brokenTx{rerr}
		}
		return nil
	}
	// Some errors (I/O, a full disk) make SQLite roll the whole transaction
	// back, savepoints included; rolling back to the savepoint then fails.
	if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO write"); rerr != nil {
		return &brokenTx{err}
	}
	if _, rerr := tx.ExecContext(ctx, "RELEASE write"); rerr != nil {
		return &brokenTx{err}
	}
	return err
}

// take claims r for running unless its caller has abandoned it.
func (r *writeReq) take() bool { return r.state.CompareAndSwap(queued, taken) }

func reply(batch []*writeReq, err error) {
	for _, r := range batch {
		r.done <- err
	}
}
