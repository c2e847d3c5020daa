package memo

import (
	"fmt"
	"sync"
	"testing"
)

// TestMemoStartsAfreshAtItsLimit: a memo keeps what it was given until it
// holds limit entries, then starts over with the next, from many goroutines
// at once.
func TestMemoStartsAfreshAtItsLimit(t *testing.T) {
	m := New[int](3)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			k := fmt.Sprint("k", i%3)
			m.Put(k, i%3)
			if v, ok := m.Get(k); ok && v != i%3 {
				t.Errorf("%s holds %d, want %d", k, v, i%3)
			}
		})
	}
	wg.Wait()
	for i := range 3 {
		if v, ok := m.Get(fmt.Sprint("k", i)); !ok || v != i {
			t.Errorf("k%d: %d %v, want %d", i, v, ok, i)
		}
	}
	m.Put("k3", 3)
	if _, ok := m.Get("k0"); ok {
		t.Error("a full memo kept its entries past its limit")
	}
	if v, ok := m.Get("k3"); !ok || v != 3 {
		t.Errorf("k3 after starting afresh: %d %v", v, ok)
	}
}
