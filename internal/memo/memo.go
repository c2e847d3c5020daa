// Package memo is the one bounded cache of what repeats from run to run:
// the catalog's snapshots, cleaned URIs and schemas, and what the built-in
// connectors decode of a pipeline's config, each worked out once.
package memo

import "sync"

// Memo is a map, safe for concurrent use. A new key once it holds limit
// entries starts it afresh, which bounds it for a server whose pipelines
// keep changing.
type Memo[V any] struct {
	mu    sync.Mutex
	limit int
	m     map[string]V
}

// New returns a Memo of at most limit entries.
func New[V any](limit int) *Memo[V] {
	return &Memo[V]{limit: limit, m: map[string]V{}}
}

// Get returns the value kept for key.
func (c *Memo[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// Put keeps v for key.
func (c *Memo[V]) Put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.limit {
		clear(c.m)
	}
	c.m[key] = v
}
