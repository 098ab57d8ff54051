package rest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/internal/bounded"
)

// catalogState is what every table's Iceberg history depends on: the
// newest snapshot, and the oldest one left — DuckDB's
// ducklake_expire_snapshots removes the oldest without committing a new
// one, and a history cached before it would still list them.
type catalogState struct {
	id    int64 // the current snapshot
	floor int64 // the oldest snapshot; 0 when not known yet
}

// snapshotCache holds the catalog's state for a short TTL, so a burst of
// LoadTable calls costs Postgres one max/min(snapshot_id) lookup (two index
// probes) per TTL instead of one per request.
type snapshotCache struct {
	ttl time.Duration
	cur atomic.Pointer[snapState]
	mu  sync.Mutex // serialises refreshes
}

type snapState struct {
	catalogState
	at time.Time // monotonic: when it was read
}

// get returns the catalog's state, reading it with load when the cached
// one is older than the TTL. Concurrent callers share one refresh.
func (c *snapshotCache) get(ctx context.Context, load func(context.Context) (catalogState, error)) (catalogState, error) {
	if st := c.cur.Load(); st != nil && time.Since(st.at) < c.ttl {
		return st.catalogState, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.cur.Load(); st != nil && time.Since(st.at) < c.ttl {
		return st.catalogState, nil
	}
	start := time.Now()
	st, err := load(ctx)
	if err != nil {
		return catalogState{}, err
	}
	c.set(st, start)
	return c.cur.Load().catalogState, nil
}

// set records st as current as of at, unless a newer snapshot is already
// known (snapshot ids only grow). A floor of 0 keeps the known one.
func (c *snapshotCache) set(st catalogState, at time.Time) {
	for {
		old := c.cur.Load()
		if old != nil && old.id > st.id {
			return
		}
		if st.floor == 0 && old != nil {
			st.floor = old.floor
		}
		if c.cur.CompareAndSwap(old, &snapState{catalogState: st, at: at}) {
			return
		}
	}
}

// ObserveSnapshot tells the catalog that snapshot id was committed (a
// NOTIFY from the ducklake_snapshot trigger, say), so LoadTable serves it at
// once instead of after SnapshotTTL. Out-of-order and repeated ids are
// harmless: the current id only grows.
func (s *Server) ObserveSnapshot(id int64) { s.snap.set(catalogState{id: id}, time.Now()) }

// currentSnapshot is the current snapshot id, at most SnapshotTTL old.
func (s *Server) currentSnapshot(ctx context.Context) (int64, error) {
	st, err := s.currentState(ctx)
	return st.id, err
}

// currentState is the catalog's state, at most SnapshotTTL old.
func (s *Server) currentState(ctx context.Context) (catalogState, error) {
	return s.snap.get(ctx, func(ctx context.Context) (catalogState, error) {
		id, floor, err := s.reader.SnapshotRange(ctx)
		return catalogState{id: id, floor: floor}, err
	})
}

// loadEntry is an encoded LoadTable answer (without vended credentials).
// Entries are immutable; revalidating one stores a copy.
type loadEntry struct {
	snap     int64 // catalog snapshot the entry was last found valid at
	floor    int64 // the catalog's oldest snapshot then (see catalogState)
	table    ducklake.Table
	location string
	metadata []byte // the metadata as served (snapshots filtered for refs)
	etag     string
	body     []byte  // the encoded LoadTableResult without credentials
	gz       *gzBody // body gzip-compressed, made on first use (gzipped)
	// restrictions is the encoded read-restrictions of a governed answer.
	restrictions []byte
}

// responseCache maps a LoadTable key (see loadKey) to its encoded answer.
// A miss costs one materialiser lookup, which has its own cache, so the
// cache starts again at its bound (bounded.Map) rather than keep an order.
type responseCache struct{ bounded.Strings[*loadEntry] }

func (c *responseCache) get(key []byte) *loadEntry {
	e, _ := c.GetBytes(key)
	return e
}

func (c *responseCache) put(key []byte, e *loadEntry) { c.PutBytes(key, e) }

// drop removes every entry of table ns.name (after a drop or rename).
func (c *responseCache) drop(ns, name string) {
	c.DeleteFunc(func(k string, _ *loadEntry) bool {
		kns, kt, ok := splitLoadKey(k)
		return ok && kns == ns && kt == name
	})
}

// A load key is: form byte, snapshot asked for (8 bytes, 0 = current),
// namespace, 0x1F, table. Namespace names cannot contain 0x1F.
func appendLoadKey(dst []byte, form byte, asOf int64, ns, table string) []byte {
	dst = append(dst, form)
	for i := 56; i >= 0; i -= 8 {
		dst = append(dst, byte(uint64(asOf)>>i))
	}
	dst = append(dst, ns...)
	dst = append(dst, 0x1f)
	return append(dst, table...)
}

func splitLoadKey(k string) (ns, table string, ok bool) {
	if len(k) < 9 {
		return "", "", false
	}
	k = k[9:]
	for i := 0; i < len(k); i++ {
		if k[i] == 0x1f {
			return k[:i], k[i+1:], true
		}
	}
	return "", "", false
}
