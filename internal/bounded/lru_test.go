package bounded

import "testing"

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := NewLRU[string, int](2)
	c.Put("a", 1)
	c.Put("b", 2)
	c.Get("a") // b is now the least recently used
	c.Put("c", 3)
	if _, ok := c.Get("b"); ok {
		t.Error("b kept: not the least recently used evicted")
	}
	for k, want := range map[string]int{"a": 1, "c": 3} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Errorf("Get(%s) = %d, %v", k, v, ok)
		}
	}
	c.Put("a", 10) // an update, no eviction
	if v, _ := c.Get("a"); v != 10 || c.Len() != 2 {
		t.Errorf("after update: a = %d, %d entries", v, c.Len())
	}
}

func TestLRUWeights(t *testing.T) {
	c := &LRU[string, []int]{Max: 5, Weight: func(v []int) int { return len(v) }}
	c.Put("big", make([]int, 6)) // heavier than Max: not kept
	if _, ok := c.Get("big"); ok {
		t.Fatal("an entry heavier than Max kept")
	}
	c.Put("x", make([]int, 3))
	c.Put("y", make([]int, 2))
	c.Put("z", make([]int, 1)) // 6 > 5: x goes
	if _, ok := c.Get("x"); ok || c.Len() != 2 {
		t.Errorf("x kept or %d entries, want x evicted and 2 left", c.Len())
	}
	c.Put("y", make([]int, 4)) // y grows to 4: 5 in all, still within Max
	if _, ok := c.Get("z"); !ok {
		t.Error("z evicted although the total is within Max")
	}
}
