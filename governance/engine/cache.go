package engine

import "sync"

// cache is a bounded map safe for concurrent use. At its bound it drops
// everything: entries are cheap to recompute, and a full reset keeps the
// hit path one read-locked map lookup with no bookkeeping.
type cache[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func (c *cache[K, V]) setMax(n int) { c.max = n }

func (c *cache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *cache[K, V]) put(k K, v V) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	c.mu.Unlock()
}
