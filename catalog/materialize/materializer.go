package materialize

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/duckicelake/duckicelake/catalog/iceberg"
	"github.com/duckicelake/duckicelake/internal/bounded"
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
	results *bounded.LRU[cacheKey, cached]
	known   *bounded.LRU[string, struct{}]
	flights singleflight.Group
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

// String is the key's singleflight key.
func (k cacheKey) String() string {
	return strconv.FormatInt(k.table, 10) + "/" + strconv.FormatInt(k.snapshot, 10) + "/v" + strconv.Itoa(k.version)
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
		results: bounded.NewLRU[cacheKey, cached](cfg.CacheEntries),
		known:   bounded.NewLRU[string, struct{}](cfg.KnownObjects),
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
	if c, ok := m.results.Get(key); ok && c.snapshots == snapshots {
		m.mu.Unlock()
		return c.res, nil
	}
	m.mu.Unlock()
	// One build per key at a time; it runs on its own goroutine
	// (singleflight's DoChan) and outlives a caller that gives up, as
	// others may wait on it.
	ch := m.flights.DoChan(key.String(), func() (any, error) {
		m.mu.Lock()
		// A flight that ended since the lookup above may have built it.
		if c, ok := m.results.Get(key); ok && c.snapshots == snapshots {
			m.mu.Unlock()
			return c.res, nil
		}
		m.builds++
		m.mu.Unlock()
		res, err := m.build(context.WithoutCancel(ctx), key)
		if err == nil {
			m.mu.Lock()
			m.results.Put(key, cached{res, snapshots})
			m.mu.Unlock()
		}
		return res, err
	})
	select {
	case r := <-ch:
		res, _ := r.Val.(*Result)
		return res, r.Err
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
	c, ok := m.results.Get(cacheKey{tableID, snapshotID, m.defaultVersion()})
	return c.res, ok
}

// Builds counts the materialisations started (cache misses that were not
// joined to a running build).
func (m *Materializer) Builds() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.builds
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
		if _, ok := m.known.Get(f.Location); !ok {
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
	m.known.Put(f.Location, struct{}{})
	m.mu.Unlock()
	return nil
}
