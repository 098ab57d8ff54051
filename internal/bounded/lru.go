package bounded

import "container/list"

// LRU is a map holding entries up to a total weight of Max, evicting the
// least recently used first: for caches whose misses are expensive (a
// materialisation, a delete file read from storage) and whose callers
// already serialise access. It is not safe for concurrent use. Weigh
// entries with Weight (nil: each weighs 1); an entry heavier than Max is
// not kept.
type LRU[K comparable, V any] struct {
	Max    int
	Weight func(V) int

	total int
	order *list.List // front = most recent; values are *lruEntry
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
	w   int
}

// NewLRU returns an LRU of max entries (of weight 1 each).
func NewLRU[K comparable, V any](max int) *LRU[K, V] { return &LRU[K, V]{Max: max} }

func (c *LRU[K, V]) weigh(v V) int {
	if c.Weight == nil {
		return 1
	}
	return c.Weight(v)
}

// Get returns the entry of k and makes it the most recently used.
func (c *LRU[K, V]) Get(k K) (V, bool) {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Put stores v under k as the most recently used, evicting the least
// recently used entries until the total weight is within Max.
func (c *LRU[K, V]) Put(k K, v V) {
	if c.items == nil {
		c.order, c.items = list.New(), make(map[K]*list.Element)
	}
	w := c.weigh(v)
	if e, ok := c.items[k]; ok {
		en := e.Value.(*lruEntry[K, V])
		c.total += w - en.w
		en.val, en.w = v, w
		c.order.MoveToFront(e)
	} else {
		if w > c.Max {
			return
		}
		c.items[k] = c.order.PushFront(&lruEntry[K, V]{k, v, w})
		c.total += w
	}
	for c.total > c.Max {
		en := c.order.Remove(c.order.Back()).(*lruEntry[K, V])
		delete(c.items, en.key)
		c.total -= en.w
	}
}

// Len is the number of entries.
func (c *LRU[K, V]) Len() int { return len(c.items) }
