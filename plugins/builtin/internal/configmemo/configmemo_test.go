package configmemo

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestMemoDecodesEachConfigOnce: a config is decoded once, whoever asks
// and however often, concurrently too; a failure, a config past the size
// bound and one beyond the entry bound are decoded again.
func TestMemoDecodesEachConfigOnce(t *testing.T) {
	var m Memo[string]
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
	for i := range maxEntries + 1 {
		m.Get(fmt.Appendf(nil, "c%d", i), decode)
	}
	if n := len(m.m); n > maxEntries {
		t.Errorf("the memo holds %d configs, past its bound of %d", n, maxEntries)
	}
}
