package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// walHarness is a driver whose checkpointer checkpoints only when a test
// says, with a bound of 16 frames and time enough for a reader to finish,
// and a way to add frames to its WAL.
type walHarness struct {
	t    *testing.T
	d    *driver
	ckpt *checkpointer
	wal  string
	n    int
}

func newWALHarness(t *testing.T) *walHarness {
	d := openDriver(t)
	if err := d.ckpt.close(); err != nil {
		t.Fatal(err)
	}
	ckpt, err := startCheckpointer(context.Background(), d.target, checkpointPolicy{every: time.Hour, restartFrames: 16, restartWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d.ckpt = ckpt
	return &walHarness{t: t, d: d, ckpt: ckpt, wal: d.target.path + "-wal"}
}

// write commits count audit entries, a frame or more each.
func (h *walHarness) write(count int) {
	h.t.Helper()
	for range count {
		h.n++
		if err := h.d.AuditInsert(context.Background(), &db.AuditEntry{ID: fmt.Sprintf("e%04d", h.n), Timestamp: time.Now(), Principal: "p", Role: "admin", Action: "test", Result: "ok"}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// reader begins a read that sees every entry written so far.
func (h *walHarness) reader() *sql.Tx {
	h.t.Helper()
	tx, err := h.d.r.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		h.t.Fatal(err)
	}
	var entries int
	if err := tx.QueryRowContext(context.Background(), `SELECT count(*) FROM faucet_audit`).Scan(&entries); err != nil || entries != h.n {
		h.t.Fatalf("the reader sees %d entries (%v), want %d", entries, err, h.n)
	}
	return tx
}

// checkpointAsReaderEnds runs the checkpointer once while reader ends a
// moment later, writes once more, and reports whether the WAL started
// over.
func (h *walHarness) checkpointAsReaderEnds(reader *sql.Tx) bool {
	h.t.Helper()
	salt := walSalt(h.t, h.wal)
	ended := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		ended <- reader.Rollback()
	}()
	h.ckpt.checkpoint(context.Background())
	// The write comes while the reader may still be reading, unless the
	// checkpoint waited for it.
	h.write(1)
	if err := <-ended; err != nil {
		h.t.Fatal(err)
	}
	return walSalt(h.t, h.wal) != salt
}

// TestWALStartsOverWhenACheckpointFallsBehind pins a reader on a snapshot
// while writes go on past it, so a passive checkpoint can copy back only
// the frames the reader's snapshot holds: left there, the WAL cannot start
// over, and grows for as long as such writes and reads overlap. Past its
// bound, the checkpointer follows with a restarting checkpoint, which
// waits for the reader, and the next write starts the WAL over.
func TestWALStartsOverWhenACheckpointFallsBehind(t *testing.T) {
	h := newWALHarness(t)
	h.write(50)
	reader := h.reader()
	h.write(50)
	if !h.checkpointAsReaderEnds(reader) {
		t.Error("the WAL went on from where it was: the checkpoint that fell behind was not followed by one that restarts it")
	}
}

// TestWALStartsOverWhenAReaderHoldsOnToIt has a passive checkpoint copy
// back every frame it counts while a reader still holds on to them: on a
// busy server one reader or another always does, so the next write cannot
// start the WAL over and the WAL grows though every passive checkpoint
// reports all caught up. Past its bound, the checkpointer follows with a
// restarting checkpoint all the same, which waits for the reader, and the
// next write starts the WAL over.
func TestWALStartsOverWhenAReaderHoldsOnToIt(t *testing.T) {
	h := newWALHarness(t)
	h.write(50)
	reader := h.reader()
	// The reader's snapshot holds every frame, so a passive checkpoint
	// copies them all back.
	var busy, frames, copied int
	if err := h.ckpt.conn.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil || copied != frames || frames <= 16 {
		t.Fatalf("passive checkpoint: %d of %d frames copied (%v), want all of more than 16", copied, frames, err)
	}
	if !h.checkpointAsReaderEnds(reader) {
		t.Error("the WAL went on from where it was: a checkpoint that copied all it counted, with a reader holding on, was not followed by one that restarts it")
	}
}

// walSalt is the first salt of the WAL file's header, which SQLite adds one
// to each time the WAL starts over.
func walSalt(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h [24]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(h[16:20])
}
