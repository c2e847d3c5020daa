package configmemo

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestMemoDecodesEachConfigOnce: a config is decoded once, whoever asks
// and however often, concurrently too; a failure and a config past the
// size bound are decoded each time, and a memo past its entry bound starts
// afresh.
func TestMemoDecodesEachConfigOnce(t *testing.T) {
	m := New[string]()
	var mu sync.Mutex
	calls := map[string]int{}
	decode := func(b []byte) (string, error) {
		mu.Lock()
		calls[string(b)]++
		mu.Unlock()
		if string(b) == "bad" {
			return "", errors.New("bad config")
		}
		return strings.ToUpper(string(b)), nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if v, err := m.Get([]byte("a"), decode); v != "A" || err != nil {
					t.Errorf("Get(a) = %q, %v", v, err)
				}
			}
		})
	}
	wg.Wait()
	if calls["a"] > 8 {
		t.Errorf("a was decoded %d times by 8 callers", calls["a"])
	}
	for range 3 {
		if _, err := m.Get([]byte("bad"), decode); err == nil {
			t.Fatal("a config that fails to decode did not fail")
		}
	}
	long := strings.Repeat("x", maxConfig+1)
	m.Get([]byte(long), decode)
	m.Get([]byte(long), decode)
	if calls["bad"] != 3 || calls[long] != 2 {
		t.Errorf("failed config decoded %d times, long config %d times; want each time", calls["bad"], calls[long])
	}
	// a and maxEntries-1 more fill the memo; one more starts it afresh.
	for i := range maxEntries - 1 {
		m.Get(fmt.Appendf(nil, "c%d", i), decode)
	}
	before := calls["a"]
	m.Get([]byte("a"), decode)
	if calls["a"] != before {
		t.Errorf("a, among the first %d configs, was decoded again", maxEntries)
	}
	m.Get([]byte("one more"), decode)
	m.Get([]byte("a"), decode)
	if calls["a"] != before+1 {
		t.Errorf("a was decoded %d more times once the memo was past its bound, want 1", calls["a"]-before)
	}
}
