package tableindex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// LoadFunc reads the Source of the catalog at snapshot: in production
// (*ducklake.Reader).TableIndexSource.
type LoadFunc func(ctx context.Context, snapshot int64) (Source, error)

// Live is the current Index of a catalog, rebuilt as snapshots are
// committed. Set Load (and OnError), then use it from any number of
// goroutines; do not copy it after first use.
type Live struct {
	// Load reads the catalog at a snapshot (required).
	Load LoadFunc
	// OnError receives the failures of rebuilds that Observe started
	// (no caller waits for those); nil drops them. The next Observe or
	// Refresh tries again.
	OnError func(snapshot int64, err error)

	cur  atomic.Pointer[Index]
	want atomic.Int64 // the newest snapshot asked for

	mu      sync.Mutex
	running chan struct{} // closed when the running rebuild ends; nil when none runs
	err     error         // how the last rebuild ended
}

// Index is the current index (nil, the empty index, before the first
// rebuild). A caller that makes several lookups for one decision should
// take it once, so that they all see the same snapshot.
func (l *Live) Index() *Index { return l.cur.Load() }

// Lookup is l.Index().Lookup: one atomic load, no lock, no allocation.
func (l *Live) Lookup(bucket, key []byte) (Match, bool) { return l.cur.Load().Lookup(bucket, key) }

// Refresh returns once the index is at snapshot or newer, rebuilding it if
// it is older: in this goroutine, or by waiting for the rebuild under way
// (which then covers the newest snapshot asked for by anyone). It returns
// the index it made sure of; lookups meanwhile keep using the previous one.
func (l *Live) Refresh(ctx context.Context, snapshot int64) (*Index, error) {
	l.ask(snapshot)
	for {
		if x := l.cur.Load(); x.Snapshot() >= snapshot {
			return x, nil
		}
		l.mu.Lock()
		if l.running == nil {
			l.running = make(chan struct{})
			l.mu.Unlock()
			if err := l.rebuild(ctx); err != nil {
				return nil, err
			}
			continue
		}
		running := l.running
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("table index at snapshot %d: %w", snapshot, ctx.Err())
		case <-running:
		}
		l.mu.Lock()
		err := l.err
		l.mu.Unlock()
		// A rebuild that failed for its own caller's context says nothing
		// of the catalog: try again, here. Any other error is ours too.
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			if x := l.cur.Load(); x.Snapshot() < snapshot {
				return nil, err
			}
		}
	}
}

// Observe asks for the index at snapshot without waiting: it starts a
// rebuild in the background unless one is under way (that one then goes on
// to snapshot), and returns at once. ctx bounds the rebuild it starts. The
// eager path calls it for every snapshot it hears of.
func (l *Live) Observe(ctx context.Context, snapshot int64) {
	l.ask(snapshot)
	if l.cur.Load().Snapshot() >= snapshot {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running != nil {
		return
	}
	l.running = make(chan struct{})
	go func() {
		// A rebuild stopped because ctx ended (the process stopping) is
		// no failure to report.
		if err := l.rebuild(ctx); err != nil && ctx.Err() == nil && l.OnError != nil {
			l.OnError(snapshot, err)
		}
	}()
}

// ask raises the snapshot wanted to at least snapshot.
func (l *Live) ask(snapshot int64) {
	for {
		w := l.want.Load()
		if w >= snapshot || l.want.CompareAndSwap(w, snapshot) {
			return
		}
	}
}

// rebuild loads and swaps in indexes until the index is at the newest
// snapshot wanted, then ends the running rebuild. Only the goroutine that
// set l.running calls it. The check that nothing more is wanted and the
// end are one critical section, so that an Observe that finds a rebuild
// running can rely on it to cover the snapshot it asked for.
func (l *Live) rebuild(ctx context.Context) error {
	for {
		l.mu.Lock()
		target := l.want.Load()
		if l.cur.Load().Snapshot() >= target {
			l.finish(nil)
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		src, err := l.Load(ctx, target)
		if err == nil && src.Snapshot != target {
			err = fmt.Errorf("the loader answered snapshot %d for %d", src.Snapshot, target)
		}
		if err != nil {
			err = fmt.Errorf("table index at snapshot %d: %w", target, err)
			l.mu.Lock()
			l.finish(err)
			l.mu.Unlock()
			return err
		}
		l.cur.Store(Build(src))
	}
}

// finish ends the running rebuild; l.mu is held.
func (l *Live) finish(err error) {
	l.err = err
	close(l.running)
	l.running = nil
}
