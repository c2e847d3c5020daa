//go:build !linux

package shm

// Create reports ErrUnsupported: regions need Linux's memfd and /proc.
func Create(slots, slotBytes int) (*Region, error) { return nil, ErrUnsupported }

// Open reports ErrUnsupported.
func Open(pid, fd, slots, slotBytes int) (*Region, error) { return nil, ErrUnsupported }
