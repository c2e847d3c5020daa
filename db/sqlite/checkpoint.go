package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/ncruces/go-sqlite3"
)

// walSizeLimit bounds the WAL file left on disk once a checkpoint lets it
// restart: a burst of writes may grow it, and it shrinks back afterwards.
const walSizeLimit = 64 << 20

// checkpointPolicy is when the checkpointer checkpoints and restarts the
// WAL.
type checkpointPolicy struct {
	// every is how often it copies the WAL back into the database file.
	every time.Duration
	// restartFrames is the WAL length, in frames, past which a checkpoint
	// that could not catch up with the writes is followed by one that
	// restarts the WAL.
	restartFrames int
	// restartWait bounds how long a restarting checkpoint waits for the
	// transactions in progress, and so how long it holds up new writes.
	restartWait time.Duration
}

// defaultCheckpoints is every store's policy: a checkpoint a second, and a
// restart past about walSizeLimit at SQLite's default page size (4 KiB
// and a 24-byte frame header), which waits 50 ms at most: it runs only
// under unbroken load, and gives up rather than stall the writes.
var defaultCheckpoints = checkpointPolicy{every: time.Second, restartFrames: walSizeLimit / (4096 + 24), restartWait: 50 * time.Millisecond}

// checkpointer moves WAL checkpoints off the write path. By default SQLite
// checkpoints inside the commit that grows the WAL past 1000 pages, so one
// write in a few hundred pays for copying pages and syncing the database
// file: the p99 of every write. The writer connection turns that off
// (wal_autocheckpoint = 0) and this connection checkpoints every
// second instead, PASSIVE, so it never waits for or blocks a writer
// or a reader; several processes sharing a file each run one, and a
// checkpoint that finds another in progress simply leaves the work to it.
//
// A passive checkpoint alone lets the WAL grow without bound under unbroken
// load: the WAL starts over only when a write begins once every frame was
// copied back and no reader holds on to one, while writes that keep coming
// add frames as it copies and readers read them. A WAL growing for good
// costs every write a file system block allocated and zeroed, and every
// read a longer search of the WAL index. So once the WAL is past its
// policy's restartFrames, the checkpointer follows the passive checkpoint
// with a RESTART one: it holds new writes for as long as it copies the
// rest and waits for the readers (restartWait at most), and the next write
// starts the WAL over, reusing its file.
type checkpointer struct {
	conn   *sql.DB
	policy checkpointPolicy
	stop   context.CancelFunc
	done   chan struct{}
}

// startCheckpointer starts the checkpointer of a file database, following
// policy; an in-memory one has no WAL and gets none (nil).
func startCheckpointer(ctx context.Context, t *target, policy checkpointPolicy) (*checkpointer, error) {
	if t.memory != "" {
		return nil, nil
	}
	conn, err := t.pool(ctx, 1, func(c *sqlite3.Conn, memory bool) error {
		if err := setupWriter(c, memory); err != nil {
			return err
		}
		return c.BusyTimeout(policy.restartWait)
	})
	if err != nil {
		return nil, err
	}
	loop, stop := context.WithCancel(context.Background())
	c := &checkpointer{conn: conn, policy: policy, stop: stop, done: make(chan struct{})}
	go c.run(loop)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(c.policy.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.checkpoint(ctx)
		}
	}
}

// checkpoint runs one passive checkpoint, and a restarting one after it
// when the WAL is long: it did not start over since the last tick. That
// the passive one copied every frame it counted is no sign that it will:
// it counts the frames there when it began, the writes of a busy server
// add more while it copies, and a reader that began before it ended still
// holds on to frames when the next write looks to start the WAL over. A
// server under unbroken load (runs finishing and reads of them, side by
// side) grew its WAL to hundreds of megabytes that way, every passive
// checkpoint reporting all caught up. A failed checkpoint (busy, or the
// disk) costs nothing but a longer WAL until the next tick succeeds.
func (c *checkpointer) checkpoint(ctx context.Context) {
	var busy, frames, copied int
	if err := c.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		return
	}
	if frames > c.policy.restartFrames {
		_, _ = c.conn.ExecContext(ctx, `PRAGMA wal_checkpoint(RESTART)`)
	}
}

// close stops the checkpointer and closes its connection; nil is a no-op.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	c.stop()
	<-c.done
	return c.conn.Close()
}
