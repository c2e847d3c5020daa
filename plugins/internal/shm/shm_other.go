//go:build !linux

package shm

import "sync/atomic"

// Create reports ErrUnsupported: regions need Linux's memfd and /proc.
func Create(slots, slotBytes int) (*Region, error) { return nil, ErrUnsupported }

// Open reports ErrUnsupported.
func Open(pid, fd, slots, slotBytes int) (*Region, error) { return nil, ErrUnsupported }

// No region exists to wait on or wake.
func sleep(*atomic.Uint32, uint32) {}
func wake(*atomic.Uint32)          {}
