// Package shm is the memory a sink plugin shares with the source plugin it
// reads: a region of equal slots, each holding one batch's records, so
// that the records cross between the two processes without being copied
// through a socket. The sink creates a region; the source opens it by the
// sink's process id and file descriptor.
package shm

import (
	"errors"
	"fmt"
)

// ErrUnsupported is Create's and Open's error on a platform without
// shareable anonymous memory; the plugins then exchange records in their
// messages.
var ErrUnsupported = errors.New("shared memory regions are not supported on this platform")

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
	return r.mem[i*r.slotBytes : (i+1)*r.slotBytes : (i+1)*r.slotBytes]
}

// Contains reports whether b starts at the start of slot i and lies
// inside it: the records were appended into the slot in place.
func (r *Region) Contains(i int, b []byte) bool {
	s := r.Slot(i)
	return len(b) > 0 && cap(b) == len(s) && &b[0] == &s[0]
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
	if slots <= 0 || slotBytes <= 0 || slots > 64 || slotBytes > 64<<20 {
		return fmt.Errorf("shared region of %d slots of %d bytes is out of bounds", slots, slotBytes)
	}
	return nil
}
