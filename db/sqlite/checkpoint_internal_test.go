package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// TestWALStartsOverUnderUnbrokenLoad writes without a pause, from several
// writers, while readers read: a passive checkpoint seldom catches up with
// such writes, and the WAL grows for as long as they last. Once the WAL is
// past its bound the checkpointer restarts it instead.
func TestWALStartsOverUnderUnbrokenLoad(t *testing.T) {
	ctx := context.Background()
	d := openDriver(t)
	// A checkpointer ticking a hundred times a second with a bound of 64
	// frames (256 KiB), in place of the store's own.
	if err := d.ckpt.close(); err != nil {
		t.Fatal(err)
	}
	const frames = 64
	ckpt, err := startCheckpointer(ctx, d.target, 10*time.Millisecond, frames)
	if err != nil {
		t.Fatal(err)
	}
	d.ckpt = ckpt
	wal := d.target.path + "-wal"

	var wg sync.WaitGroup
	var stop atomic.Bool
	var writes atomic.Int64
	// A kilobyte and a half per entry, so each write is several pages.
	fingerprint := strings.Repeat("x", 1500)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				e := &db.AuditEntry{ID: fmt.Sprintf("w%d-%d", w, i), Timestamp: time.Now(), Principal: "p", Role: "admin", Action: "test", Result: "ok", ConfigFingerprint: &fingerprint}
				if err := d.AuditInsert(ctx, e); err != nil {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := d.AuditList(ctx, &db.AuditListParams{Limit: 20}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// The WAL starts over each time the first salt of its header grows.
	for writes.Load() < 100 {
		time.Sleep(time.Millisecond)
	}
	salt := walSalt(t, wal)
	time.Sleep(1500 * time.Millisecond)
	restarts := walSalt(t, wal) - salt
	stop.Store(true)
	wg.Wait()
	info, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes; the WAL started over %d times, its file is %d bytes", writes.Load(), restarts, info.Size())
	// Left to passive checkpoints, the WAL of these writes started over
	// about 5 times in 1.5 s and grew to 50 MB; the checkpointer ticks 150
	// times, and past the bound each tick starts it over.
	if restarts < 20 {
		t.Errorf("the WAL started over %d times in 1.5 s of unbroken writes; want 20 or more", restarts)
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
