package shm

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Create makes a region of slots slots of slotBytes each in a memfd. Its
// pages are allocated as they are first written.
func Create(slots, slotBytes int) (*Region, error) {
	if err := checkShape(slots, slotBytes); err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("faucet-batches", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create shared region: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(HeaderBytes+slots*slotBytes)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("size shared region: %w", err)
	}
	return mapRegion(fd, slots, slotBytes)
}

// Open maps the region another process created, by its process id and its
// file descriptor there. It needs the rights to read that process's file
// descriptors (the same user), which plugins of one faucet have.
func Open(pid, fd, slots, slotBytes int) (*Region, error) {
	if err := checkShape(slots, slotBytes); err != nil {
		return nil, err
	}
	own, err := unix.Open(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open shared region of process %d: %w", pid, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(own, &st); err != nil || st.Size < int64(HeaderBytes+slots*slotBytes) {
		unix.Close(own)
		return nil, fmt.Errorf("shared region of process %d is not %d slots of %d bytes (%v)", pid, slots, slotBytes, err)
	}
	return mapRegion(own, slots, slotBytes)
}

func mapRegion(fd, slots, slotBytes int) (*Region, error) {
	mem, err := unix.Mmap(fd, 0, HeaderBytes+slots*slotBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("map shared region: %w", err)
	}
	r := &Region{mem: mem, fd: fd, slots: slots, slotBytes: slotBytes}
	r.unmap = func() error {
		err := unix.Munmap(mem)
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
		return err
	}
	return r, nil
}

// The futex operations (linux/futex.h).
const (
	futexWait = 0
	futexWake = 1
)

// sleepMax bounds one wait on the futex, so that a waiting source notices
// its read was cancelled (its sink gone) soon enough.
const sleepMax = 50 * time.Millisecond

// sleep waits on the futex word v while it holds seen, for sleepMax at
// most. The word is shared with another process, so the futex is not
// private.
func sleep(v *atomic.Uint32, seen uint32) {
	ts := unix.NsecToTimespec(int64(sleepMax))
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(v)), futexWait, uintptr(seen), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// wake wakes the process sleeping on v.
func wake(v *atomic.Uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(v)), futexWake, 1, 0, 0, 0)
}
