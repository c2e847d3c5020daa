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

// TestWALStartsOverWhenACheckpointFallsBehind pins a reader on a snapshot
// while writes go on past it, so a passive checkpoint can copy back only
// the frames the reader's snapshot holds: left there, the WAL cannot start
// over, and grows for as long as such writes and reads overlap. Past its
// bound, the checkpointer follows with a restarting checkpoint, which
// waits for the reader, and the next write starts the WAL over.
func TestWALStartsOverWhenACheckpointFallsBehind(t *testing.T) {
	ctx := context.Background()
	d := openDriver(t)
	// A checkpointer that checkpoints only when the test says, with a bound
	// of 16 frames and time enough for the reader to finish.
	if err := d.ckpt.close(); err != nil {
		t.Fatal(err)
	}
	ckpt, err := startCheckpointer(ctx, d.target, checkpointPolicy{every: time.Hour, restartFrames: 16, restartWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d.ckpt = ckpt
	wal := d.target.path + "-wal"
	n := 0
	write := func(count int) {
		for range count {
			n++
			if err := d.AuditInsert(ctx, &db.AuditEntry{ID: fmt.Sprintf("e%04d", n), Timestamp: time.Now(), Principal: "p", Role: "admin", Action: "test", Result: "ok"}); err != nil {
				t.Fatal(err)
			}
		}
	}

	write(50)
	reader, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var entries int
	if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM faucet_audit`).Scan(&entries); err != nil || entries != 50 {
		t.Fatalf("the reader sees %d entries (%v), want 50", entries, err)
	}
	write(50)
	salt := walSalt(t, wal)
	// The reader finishes while the checkpointer waits for it.
	ended := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		ended <- reader.Rollback()
	}()
	ckpt.checkpoint(ctx)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	write(1)
	if got := walSalt(t, wal); got == salt {
		t.Error("the WAL went on from where it was: the checkpoint that fell behind was not followed by one that restarts it")
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

// TestWALStartsOverWhenAReaderHoldsOnToIt has a passive checkpoint copy
// back every frame it counts while a reader still holds on to them: on a
// busy server one reader or another always does, so the next write cannot
// start the WAL over and the WAL grows though every passive checkpoint
// reports all caught up. Past its bound, the checkpointer follows with a
// restarting checkpoint all the same, which waits for the reader, and the
// next write starts the WAL over.
func TestWALStartsOverWhenAReaderHoldsOnToIt(t *testing.T) {
	ctx := context.Background()
	d := openDriver(t)
	if err := d.ckpt.close(); err != nil {
		t.Fatal(err)
	}
	ckpt, err := startCheckpointer(ctx, d.target, checkpointPolicy{every: time.Hour, restartFrames: 16, restartWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	d.ckpt = ckpt
	wal := d.target.path + "-wal"
	for i := range 50 {
		if err := d.AuditInsert(ctx, &db.AuditEntry{ID: fmt.Sprintf("e%04d", i), Timestamp: time.Now(), Principal: "p", Role: "admin", Action: "test", Result: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	reader, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var entries int
	if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM faucet_audit`).Scan(&entries); err != nil || entries != 50 {
		t.Fatalf("the reader sees %d entries (%v), want 50", entries, err)
	}
	// The reader's snapshot holds every frame, so a passive checkpoint
	// copies them all back.
	var busy, frames, copied int
	if err := d.ckpt.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil || copied != frames || frames <= 16 {
		t.Fatalf("passive checkpoint: %d of %d frames copied (%v), want all of more than 16", copied, frames, err)
	}
	salt := walSalt(t, wal)
	ended := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		ended <- reader.Rollback()
	}()
	ckpt.checkpoint(ctx)
	// The write comes while the reader may still be reading, unless the
	// checkpoint waited for it.
	if err := d.AuditInsert(ctx, &db.AuditEntry{ID: "last", Timestamp: time.Now(), Principal: "p", Role: "admin", Action: "test", Result: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	if got := walSalt(t, wal); got == salt {
		t.Error("the WAL went on from where it was: a checkpoint that copied all it counted, with a reader holding on, was not followed by one that restarts it")
	}
}
