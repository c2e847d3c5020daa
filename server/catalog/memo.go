package catalog

import "sync"

// memo is a map, safe for concurrent use, of what the runs of a pipeline
// repeat (their snapshot, their cleaned URIs, their schemas), so each is
// worked out once. A new key once it holds limit entries starts it afresh,
// which bounds it for a server whose pipelines keep changing.
type memo[V any] struct {
	mu    sync.Mutex
	limit int
	m     map[string]V
}

func newMemo[V any](limit int) *memo[V] {
	return &memo[V]{limit: limit, m: map[string]V{}}
}

func (c *memo[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *memo[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.limit {
		clear(c.m)
	}
	c.m[key] = v
}
