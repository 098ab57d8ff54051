// Package bounded holds the bounded cache maps of the catalog and
// governance hot paths: Map (and Strings, the same keyed by strings and
// looked up by bytes), which starts again empty at its bound, for entries
// cheap to recompute; and LRU, which evicts the least recently used, for
// entries whose misses are expensive. It imports only the standard library.
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
	c.makeRoom(k)
	c.m[k] = v
	c.mu.Unlock()
}

// makeRoom readies c.m for k: made on first use, started again when k is
// a new key and the map is at its bound (a replaced entry needs no room).
func (c *Map[K, V]) makeRoom(k K) {
	if c.m == nil {
		c.m = make(map[K]V)
		return
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.Max {
		c.m = make(map[K]V)
	}
}

// DeleteFunc removes every entry for which del reports true.
func (c *Map[K, V]) DeleteFunc(del func(K, V) bool) {
	c.mu.Lock()
	for k, v := range c.m {
		if del(k, v) {
			delete(c.m, k)
		}
	}
	c.mu.Unlock()
}

// Len is the number of entries.
func (c *Map[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// Strings is a Map keyed by strings whose callers hold their keys as
// bytes (a token from a header, a key built in scratch): GetBytes looks
// one up without converting it first, so a hit allocates nothing.
type Strings[V any] struct{ Map[string, V] }

// GetBytes returns the entry of string(k).
func (c *Strings[V]) GetBytes(k []byte) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[string(k)] // no conversion: the compiler indexes by the bytes
	c.mu.RUnlock()
	return v, ok
}

// PutBytes stores v under string(k), a copy of k.
func (c *Strings[V]) PutBytes(k []byte, v V) { c.Put(string(k), v) }
