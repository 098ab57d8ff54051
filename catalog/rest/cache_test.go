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
	load := func(context.Context) (catalogState, error) { loads.Add(1); return catalogState{id: 7, floor: 1}, nil }
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := c.get(context.Background(), load); err != nil || st != (catalogState{7, 1}) {
				t.Errorf("get = %+v, %v", st, err)
			}
		}()
	}
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("16 concurrent gets loaded %d times, want 1", n)
	}
	// Observed ids only move forward, and keep the known floor.
	c.set(catalogState{id: 9}, time.Now())
	c.set(catalogState{id: 8}, time.Now())
	if st, _ := c.get(context.Background(), load); st != (catalogState{9, 1}) {
		t.Errorf("after set(9), set(8): %+v", st)
	}
	// An expired state is reloaded; a failed load is reported, not cached.
	c.ttl = 0
	boom := errors.New("boom")
	if _, err := c.get(context.Background(), func(context.Context) (catalogState, error) { return catalogState{}, boom }); !errors.Is(err, boom) {
		t.Errorf("failed load: %v", err)
	}
	if st, _ := c.get(context.Background(), func(context.Context) (catalogState, error) { return catalogState{12, 1}, nil }); st != (catalogState{12, 1}) {
		t.Errorf("reload = %+v", st)
	}
	// Snapshots expired without a new one: the same id, a higher floor.
	if st, _ := c.get(context.Background(), func(context.Context) (catalogState, error) { return catalogState{12, 5}, nil }); st != (catalogState{12, 5}) {
		t.Errorf("after an expiry = %+v, want the new floor", st)
	}
}

func TestResponseCacheBounded(t *testing.T) {
	var c responseCache
	c.Max = 16
	for i := 0; i < 200; i++ {
		c.put(appendLoadKey(nil, formAll, int64(i), "ns", "t"), &loadEntry{snap: int64(i)})
		if c.Len() > c.Max {
			t.Fatalf("cache grew to %d", c.Len())
		}
	}
	c.put(appendLoadKey(nil, formAll, 0, "ns", "t"), &loadEntry{})
	c.put(appendLoadKey(nil, formRefs, 0, "ns", "t"), &loadEntry{})
	c.put(appendLoadKey(nil, formAll, 0, "ns", "u"), &loadEntry{})
	c.drop("ns", "t")
	for _, form := range []byte{formAll, formRefs} {
		if c.get(appendLoadKey(nil, form, 0, "ns", "t")) != nil {
			t.Errorf("drop left the form %d entry of ns.t", form)
		}
	}
	if c.get(appendLoadKey(nil, formAll, 0, "ns", "u")) == nil {
		t.Error("drop removed another table's entry")
	}
}
