package rest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSnapshotCache(t *testing.T) {
	c := snapshotCache{ttl: time.Hour}
	var loads atomic.Int64
	load := func(context.Context) (int64, error) { loads.Add(1); return 7, nil }
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id, err := c.get(context.Background(), load); err != nil || id != 7 {
				t.Errorf("get = %d, %v", id, err)
			}
		}()
	}
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("16 concurrent gets loaded %d times, want 1", n)
	}
	// Observed ids only move forward.
	c.set(9, time.Now())
	c.set(8, time.Now())
	if id, _ := c.get(context.Background(), load); id != 9 {
		t.Errorf("after set(9), set(8): %d", id)
	}
	// An expired id is reloaded; a failed load is reported, not cached.
	c.ttl = 0
	boom := errors.New("boom")
	if _, err := c.get(context.Background(), func(context.Context) (int64, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("failed load: %v", err)
	}
	if id, _ := c.get(context.Background(), func(context.Context) (int64, error) { return 12, nil }); id != 12 {
		t.Errorf("reload = %d", id)
	}
}

func TestResponseCacheBounded(t *testing.T) {
	c := responseCache{max: 16}
	for i := 0; i < 200; i++ {
		c.put(appendLoadKey(nil, formAll, int64(i), "ns", "t"), &loadEntry{snap: int64(i)})
		if len(c.m) > c.max {
			t.Fatalf("cache grew to %d", len(c.m))
		}
	}
	c.put(appendLoadKey(nil, formAll, 0, "ns", "t"), &loadEntry{})
	c.put(appendLoadKey(nil, formRefs, 0, "ns", "t"), &loadEntry{})
	c.put(appendLoadKey(nil, formAll, 0, "ns", "u"), &loadEntry{})
	c.drop("ns", "t")
	for k := range c.m {
		if ns, table, _ := splitLoadKey(k); ns == "ns" && table == "t" {
			t.Errorf("drop left %q", k)
		}
	}
	if c.get(appendLoadKey(nil, formAll, 0, "ns", "u")) == nil {
		t.Error("drop removed another table's entry")
	}
}
