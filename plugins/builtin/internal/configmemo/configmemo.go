// Package configmemo keeps what a built-in connector works out of a
// config, by the config's bytes. faucet asks a connector for the datasets
// of every session it ends, and the sessions of a pipeline's runs have the
// same few configs: decoding one again for each cost a trivial run more
// than the rest of its dataset report.
package configmemo

import "github.com/faucet-dev/faucet/internal/memo"

// Bounds of a Memo: at most maxEntries configs, each at most maxConfig
// bytes long (a longer one is decoded every time), so a plugin serving
// ever new configs holds at most a few megabytes of them.
const (
	maxEntries = 256
	maxConfig  = 8 << 10
)

// Memo maps configs to what was decoded of them; it is safe for
// concurrent use.
type Memo[V any] struct{ kept *memo.Memo[V] }

// New returns an empty Memo.
func New[V any]() Memo[V] { return Memo[V]{kept: memo.New[V](maxEntries)} }

// Get returns what decode makes of config, decoding it only the first
// time; a config that fails to decode is not kept, so its error is the
// decoder's each time.
func (c Memo[V]) Get(config []byte, decode func([]byte) (V, error)) (V, error) {
	if v, ok := c.kept.Get(string(config)); ok {
		return v, nil
	}
	v, err := decode(config)
	if err == nil && len(config) <= maxConfig {
		c.kept.Put(string(config), v)
	}
	return v, err
}
