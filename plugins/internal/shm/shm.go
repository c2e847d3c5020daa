// Package shm is the memory a sink plugin shares with the source plugin it
// reads: a region of equal slots, each holding one batch's records, so
// that the records cross between the two processes without being copied
// through a socket. The sink creates a region; the source opens it by the
// sink's process id and file descriptor. A header before the slots counts
// the batches the sink has consumed, which tells the source which slot it
// may fill next (see the connector protocol's SharedRegion).
package shm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// ErrUnsupported is Create's and Open's error on a platform without
// shareable anonymous memory; the plugins then exchange records in their
// messages.
var ErrUnsupported = errors.New("shared memory regions are not supported on this platform")

// HeaderBytes is the size of the header: a page, so the slots stay aligned.
const HeaderBytes = 4096

// Region is a mapping of a shared region.
type Region struct {
	mem       []byte
	fd        int
	slots     int
	slotBytes int
	unmap     func() error
}

// Slots is the number of slots.
func (r *Region) Slots() int { return r.slots }

// SlotBytes is the size of each slot.
func (r *Region) SlotBytes() int { return r.slotBytes }

// FD is the region's file descriptor in this process.
func (r *Region) FD() int { return r.fd }

// Slot returns slot i, a slice whose capacity ends with the slot, so that
// appending beyond it reallocates instead of spilling into the next.
func (r *Region) Slot(i int) []byte {
	start := HeaderBytes + i*r.slotBytes
	return r.mem[start : start+r.slotBytes : start+r.slotBytes]
}

// Contains reports whether b starts at the start of slot i and lies
// inside it: the records were appended into the slot in place.
func (r *Region) Contains(i int, b []byte) bool {
	s := r.Slot(i)
	return len(b) > 0 && cap(b) == len(s) && &b[0] == &s[0]
}

// consumed is the header's count of batches the sink consumed; waiting is
// set while the source sleeps on it.
func (r *Region) consumed() *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&r.mem[0])) }
func (r *Region) waiting() *atomic.Uint32  { return (*atomic.Uint32)(unsafe.Pointer(&r.mem[4])) }

// Consumed tells the source the sink is done with one more batch, waking
// it if it waits for that.
func (r *Region) Consumed() {
	r.consumed().Add(1)
	if r.waiting().Load() != 0 {
		wake(r.consumed())
	}
}

// WaitConsumed waits until the sink has consumed at least n batches, or ctx
// is done.
func (r *Region) WaitConsumed(ctx context.Context, n uint32) error {
	for {
		seen := r.consumed().Load()
		if int32(seen-n) >= 0 {
			return nil
		}
		r.waiting().Store(1)
		// Announced, then checked again: the sink either sees the flag or
		// has already counted the batch.
		if seen = r.consumed().Load(); int32(seen-n) >= 0 {
			r.waiting().Store(0)
			return nil
		}
		sleep(r.consumed(), seen)
		r.waiting().Store(0)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Close unmaps the region; the memory is freed once no process maps it.
func (r *Region) Close() error {
	if r.unmap == nil {
		return nil
	}
	err := r.unmap()
	r.unmap, r.mem = nil, nil
	return err
}

func checkShape(slots, slotBytes int) error {
	if slots <= 0 || slotBytes <= 0 || slots > 64 || slotBytes > 64<<20 || slotBytes%HeaderBytes != 0 {
		return fmt.Errorf("shared region of %d slots of %d bytes is out of bounds", slots, slotBytes)
	}
	return nil
}
