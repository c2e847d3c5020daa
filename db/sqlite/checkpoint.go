package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// checkpointEvery is how often the checkpointer copies the WAL back into the
// database file.
const checkpointEvery = time.Second

// walSizeLimit bounds the WAL file left on disk once a checkpoint lets it
// restart: a burst of writes may grow it, and it shrinks back afterwards.
const walSizeLimit = 64 << 20

// checkpointer moves WAL checkpoints off the write path. By default SQLite
// checkpoints inside the commit that grows the WAL past 1000 pages, so one
// write in a few hundred pays for copying pages and syncing the database
// file: the p99 of every write. The writer connection turns that off
// (wal_autocheckpoint = 0) and this connection checkpoints every
// checkpointEvery instead, PASSIVE, so it never waits for or blocks a writer
// or a reader; several processes sharing a file each run one, and a
// checkpoint that finds another in progress simply leaves the work to it.
type checkpointer struct {
	conn *sql.DB
	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer starts the checkpointer of a file database; an in-memory
// one has no WAL and gets none (nil).
func startCheckpointer(ctx context.Context, t *target) (*checkpointer, error) {
	if t.memory != "" {
		return nil, nil
	}
	conn, err := t.pool(ctx, 1, setupWriter)
	if err != nil {
		return nil, err
	}
	loop, stop := context.WithCancel(context.Background())
	c := &checkpointer{conn: conn, stop: stop, done: make(chan struct{})}
	go c.run(loop)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			// A failed checkpoint (busy, or the disk) costs nothing but a
			// longer WAL until the next tick succeeds.
			_, _ = c.conn.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		}
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
