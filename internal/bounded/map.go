// Package bounded holds Map, the one bounded cache map of the catalog and
// governance hot paths. It imports only the standard library.
package bounded

import "sync"

// Map is a map safe for concurrent use holding at most Max entries: at
// the bound it starts again empty. Its users' entries are cheap to
// recompute, and a reset keeps a hit one read-locked lookup with no
// bookkeeping and no allocation. Set Max before use.
type Map[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	Max int
}

// Get returns the entry of k.
func (c *Map[K, V]) Get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// Put stores v under k.
func (c *Map[K, V]) Put(k K, v V) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.Max {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	c.mu.Unlock()
}
