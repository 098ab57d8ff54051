package materialize

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/objstore"
)

// Result is a materialised table as the catalog serves it. It is shared
// between callers and must not be modified.
type Result struct {
	Metadata         *iceberg.TableMetadata
	MetadataJSON     []byte
	MetadataLocation string // where MetadataJSON is stored
}

// Config configures a Materializer.
type Config struct {
	Source Source
	// Writer stores the outputs. They are immutable, so nothing is ever
	// overwritten: the Materializer asks Exists first and writes only what
	// is missing.
	Writer objstore.Store
	// CacheEntries bounds the result cache; 0 means 256.
	CacheEntries int
	// KnownObjects bounds the set of locations known to be stored, which
	// saves an Exists call per file on later snapshots; 0 means 65536.
	KnownObjects int
	// WriteConcurrency bounds parallel uploads; 0 means 8.
	WriteConcurrency int
	// Options apply to every build; a Source that is a Resolver may choose
	// another format version per table.
	Options Options
}

// Materializer materialises DuckLake snapshots as Iceberg metadata, writes
// each output once through its Writer and caches the results: a
// bounded LRU keyed by (table, snapshot, format version), with concurrent
// requests for the same key sharing one build. When the Source is a
// [Resolver], a request is keyed by the snapshot the table last changed at,
// so commits to other tables cost no build. Safe for concurrent use.
type Materializer struct {
	cfg Config

	mu      sync.Mutex
	results *lru[cacheKey, cached]
	known   *lru[string, struct{}]
	flights map[cacheKey]*flight
	builds  int
}

// cacheKey is what a build depends on: the table, the snapshot it is built
// at and the format version.
type cacheKey struct {
	table, snapshot int64
	version         int
}

// cached is a result with the Resolved.Snapshots it was built with: when
// snapshots up to it have expired since, the history differs and the entry
// is stale.
type cached struct {
	res       *Result
	snapshots int64
}

type flight struct {
	done chan struct{}
	res  *Result
	err  error
}

// NewMaterializer returns a Materializer; cfg.Source and cfg.Writer are
// required.
func NewMaterializer(cfg Config) *Materializer {
	if cfg.CacheEntries <= 0 {
		cfg.CacheEntries = 256
	}
	if cfg.KnownObjects <= 0 {
		cfg.KnownObjects = 65536
	}
	if cfg.WriteConcurrency <= 0 {
		cfg.WriteConcurrency = 8
	}
	return &Materializer{
		cfg:     cfg,
		results: newLRU[cacheKey, cached](cfg.CacheEntries),
		known:   newLRU[string, struct{}](cfg.KnownObjects),
		flights: map[cacheKey]*flight{},
	}
}

// Materialize returns table tableID as of DuckLake snapshot snapshotID,
// building and storing it unless cached. Errors are not cached.
func (m *Materializer) Materialize(ctx context.Context, tableID, snapshotID int64) (*Result, error) {
	key := cacheKey{tableID, snapshotID, m.defaultVersion()}
	snapshots := int64(-1) // unknown: a Source that is no Resolver
	if r, ok := m.cfg.Source.(Resolver); ok {
		res, err := r.Resolve(ctx, tableID, snapshotID)
		if err != nil {
			return nil, err
		}
		key.snapshot, snapshots = res.Snapshot, res.Snapshots
		if res.FormatVersion != 0 {
			key.version = res.FormatVersion
		}
	}
	m.mu.Lock()
	if c, ok := m.results.get(key); ok && c.snapshots == snapshots {
		m.mu.Unlock()
		return c.res, nil
	}
	f := m.flights[key]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		m.flights[key] = f
		m.builds++
		// The build outlives a caller that gives up: others may wait on it.
		go m.run(context.WithoutCancel(ctx), key, snapshots, f)
	}
	m.mu.Unlock()
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m *Materializer) defaultVersion() int { return cmp.Or(m.cfg.Options.FormatVersion, 2) }

// Cached returns the result cached for table tableID built at snapshot
// snapshotID in the default format version, if any. With a Resolver, only
// snapshots at which the table changed are built at.
func (m *Materializer) Cached(tableID, snapshotID int64) (*Result, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.results.get(cacheKey{tableID, snapshotID, m.defaultVersion()})
	return c.res, ok
}

// Builds counts the materialisations started (cache misses that were not
// joined to a running build).
func (m *Materializer) Builds() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.builds
}

func (m *Materializer) run(ctx context.Context, key cacheKey, snapshots int64, f *flight) {
	f.res, f.err = m.build(ctx, key)
	m.mu.Lock()
	delete(m.flights, key)
	if f.err == nil {
		m.results.put(key, cached{f.res, snapshots})
	}
	m.mu.Unlock()
	close(f.done)
}

func (m *Materializer) build(ctx context.Context, key cacheKey) (*Result, error) {
	opts := m.cfg.Options
	opts.FormatVersion = key.version
	out, err := Materialise(ctx, m.cfg.Source, key.table, key.snapshot, opts)
	if err != nil {
		return nil, err
	}
	// Everything the metadata references first, in parallel; the metadata
	// file last, so no stored metadata ever points at a missing file.
	n := len(out.Files)
	if err := m.store(ctx, out.Files[:n-1]); err != nil {
		return nil, err
	}
	if err := m.store(ctx, out.Files[n-1:]); err != nil {
		return nil, err
	}
	if rec, ok := m.cfg.Source.(MetadataRecorder); ok {
		if err := rec.RecordMetadata(ctx, key.table, key.snapshot, out.MetadataLocation, out.Metadata.LastUpdatedMS); err != nil {
			return nil, err
		}
	}
	return &Result{Metadata: out.Metadata, MetadataJSON: out.MetadataJSON, MetadataLocation: out.MetadataLocation}, nil
}

func (m *Materializer) store(ctx context.Context, files []File) error {
	var todo []File
	m.mu.Lock()
	for _, f := range files {
		if _, ok := m.known.get(f.Location); !ok {
			todo = append(todo, f)
		}
	}
	m.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan File)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range min(m.cfg.WriteConcurrency, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if err := m.storeOne(ctx, f); err != nil {
					select {
					case errs <- err:
					default:
					}
					cancel()
				}
			}
		}()
	}
feed:
	for _, f := range todo {
		select {
		case work <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}

func (m *Materializer) storeOne(ctx context.Context, f File) error {
	loc, err := objstore.Parse(f.Location)
	if err != nil {
		return fmt.Errorf("write the table's metadata: %w", err)
	}
	ok, err := m.cfg.Writer.Exists(ctx, loc)
	if err != nil {
		return fmt.Errorf("check %s: %w", f.Location, err)
	}
	if !ok {
		if err := m.cfg.Writer.Put(ctx, loc, f.Body); err != nil {
			return fmt.Errorf("write %s: %w", f.Location, err)
		}
	}
	m.mu.Lock()
	m.known.put(f.Location, struct{}{})
	m.mu.Unlock()
	return nil
}

// lru is a bounded map that evicts the least recently used entry. It is not
// safe for concurrent use; Materializer guards it with its mutex.
type lru[K comparable, V any] struct {
	max   int
	order *list.List // front = most recent; values are *lruEntry
	items map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).val, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry[K, V]).val = v
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{k, v})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K, V]).key)
	}
}
