package tableindex

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// loader is a LoadFunc that records the snapshots it is asked for and,
// when gate is set, waits for a value on it before answering each.
type loader struct {
	mu      sync.Mutex
	calls   []int64
	gate    chan error
	entered chan int64 // receives each snapshot as a load starts, when set
}

func (l *loader) load(ctx context.Context, snap int64) (Source, error) {
	l.mu.Lock()
	l.calls = append(l.calls, snap)
	l.mu.Unlock()
	if l.entered != nil {
		l.entered <- snap
	}
	if l.gate != nil {
		select {
		case err := <-l.gate:
			if err != nil {
				return Source{}, err
			}
		case <-ctx.Done():
			return Source{}, ctx.Err()
		}
	}
	src := fixture()
	src.Snapshot = snap
	return src, nil
}

func (l *loader) called() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	ld := &loader{}
	l := &Live{Load: ld.load}
	if _, ok := l.Lookup([]byte("lake"), []byte("data/a/t/x")); ok || l.Index().Snapshot() != -1 {
		t.Fatal("a Live that never loaded answers")
	}
	x, err := l.Refresh(ctx, 3)
	if err != nil || x.Snapshot() != 3 || l.Index() != x {
		t.Fatalf("Refresh(3) = %v, %v", x.Snapshot(), err)
	}
	if m, ok := l.Lookup([]byte("lake"), []byte("data/a/t/x")); !ok || m.Table.ID != 1 {
		t.Errorf("Lookup after Refresh = %+v, %v", m, ok)
	}
	// Older or equal snapshots need no load.
	for _, s := range []int64{3, 2, 0} {
		if x, err := l.Refresh(ctx, s); err != nil || x.Snapshot() != 3 {
			t.Errorf("Refresh(%d) = %v, %v", s, x.Snapshot(), err)
		}
	}
	if _, err := l.Refresh(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if got := ld.called(); !slices.Equal(got, []int64{3, 5}) {
		t.Errorf("loads = %v, want [3 5]", got)
	}
}

func TestLookupsDoNotWaitForARebuild(t *testing.T) {
	ctx := context.Background()
	ld := &loader{gate: make(chan error), entered: make(chan int64, 1)}
	l := &Live{Load: ld.load}
	go func() { ld.gate <- nil }()
	if _, err := l.Refresh(ctx, 1); err != nil {
		t.Fatal(err)
	}
	<-ld.entered
	done := make(chan error, 1)
	go func() { _, err := l.Refresh(ctx, 2); done <- err }()
	<-ld.entered // the rebuild to 2 is under way, held at the gate
	if m, ok := l.Lookup([]byte("lake"), []byte("outside/f1.parquet")); !ok || m.Table.ID != 2 || l.Index().Snapshot() != 1 {
		t.Errorf("during a rebuild: %+v %v at snapshot %d", m, ok, l.Index().Snapshot())
	}
	ld.gate <- nil
	if err := <-done; err != nil || l.Index().Snapshot() != 2 {
		t.Errorf("after the rebuild: %v at snapshot %d", err, l.Index().Snapshot())
	}
}

func TestRebuildsCoalesce(t *testing.T) {
	ctx := context.Background()
	ld := &loader{gate: make(chan error), entered: make(chan int64, 8)}
	l := &Live{Load: ld.load}
	l.Observe(ctx, 5)
	<-ld.entered // loading 5
	// Asked for while 5 loads: one more load, at the newest.
	l.Observe(ctx, 6)
	l.Observe(ctx, 8)
	l.Observe(ctx, 7)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Refresh(ctx, 6)
			errs <- err
		}()
	}
	ld.gate <- nil // 5 done
	<-ld.entered   // loading 8
	ld.gate <- nil
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := ld.called(); !slices.Equal(got, []int64{5, 8}) {
		t.Errorf("loads = %v, want [5 8]", got)
	}
	if s := l.Index().Snapshot(); s != 8 {
		t.Errorf("index at %d, want 8", s)
	}
}

func TestRefreshErrors(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("catalog down")
	ld := &loader{gate: make(chan error, 1)}
	l := &Live{Load: ld.load}
	ld.gate <- nil
	if _, err := l.Refresh(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ld.gate <- boom
	if _, err := l.Refresh(ctx, 2); !errors.Is(err, boom) {
		t.Errorf("Refresh = %v, want %v", err, boom)
	}
	if l.Index().Snapshot() != 1 {
		t.Error("a failed rebuild replaced the index")
	}
	ld.gate <- nil // the next one tries again
	if x, err := l.Refresh(ctx, 2); err != nil || x.Snapshot() != 2 {
		t.Errorf("retry: %v, %v", x.Snapshot(), err)
	}

	// A loader that answers another snapshot than asked is refused.
	wrong := &Live{Load: func(context.Context, int64) (Source, error) { return Source{Snapshot: 1}, nil }}
	if _, err := wrong.Refresh(ctx, 2); err == nil {
		t.Error("a loader answering the wrong snapshot was believed")
	}
}

func TestWaitersShareTheRebuildsError(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("catalog down")
	// Room for two failures: the second Refresh either waits for the
	// first's rebuild and shares its error, or (if it came too late to
	// wait) fails its own. Either way it fails, and does not spin.
	ld := &loader{gate: make(chan error, 2), entered: make(chan int64, 2)}
	l := &Live{Load: ld.load}
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := l.Refresh(ctx, 1); errs <- err }()
	}
	<-ld.entered
	ld.gate <- boom
	ld.gate <- boom
	for range 2 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Errorf("Refresh = %v, want %v", err, boom)
		}
	}
	if n := len(ld.called()); n > 2 {
		t.Errorf("%d loads for two callers", n)
	}
}

func TestRefreshContexts(t *testing.T) {
	ld := &loader{gate: make(chan error), entered: make(chan int64, 2)}
	l := &Live{Load: ld.load}

	// The runner's context ends: a waiter takes over with its own.
	runnerCtx, cancelRunner := context.WithCancel(context.Background())
	runner := make(chan error, 1)
	go func() { _, err := l.Refresh(runnerCtx, 1); runner <- err }()
	<-ld.entered
	waiter := make(chan error, 1)
	go func() { _, err := l.Refresh(context.Background(), 1); waiter <- err }()
	waitFor(t, l.waiting)
	cancelRunner()
	if err := <-runner; !errors.Is(err, context.Canceled) {
		t.Errorf("runner: %v, want context.Canceled", err)
	}
	<-ld.entered // the waiter's own load
	ld.gate <- nil
	if err := <-waiter; err != nil || l.Index().Snapshot() != 1 {
		t.Errorf("waiter: %v at %d", err, l.Index().Snapshot())
	}

	// A waiter whose context ends returns; the rebuild goes on.
	go func() { _, err := l.Refresh(context.Background(), 2); runner <- err }()
	<-ld.entered
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := l.Refresh(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiter with a deadline: %v", err)
	}
	ld.gate <- nil
	if err := <-runner; err != nil || l.Index().Snapshot() != 2 {
		t.Errorf("runner: %v at %d", err, l.Index().Snapshot())
	}
}

func TestObserveReportsErrors(t *testing.T) {
	boom := errors.New("catalog down")
	got := make(chan error, 1)
	l := &Live{
		Load:    func(context.Context, int64) (Source, error) { return Source{}, boom },
		OnError: func(snap int64, err error) { got <- err },
	}
	l.Observe(context.Background(), 4)
	if err := <-got; !errors.Is(err, boom) {
		t.Errorf("OnError got %v", err)
	}
	// Observe after a stop (its context ended) reports nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	quiet := &Live{
		Load:    func(ctx context.Context, _ int64) (Source, error) { return Source{}, ctx.Err() },
		OnError: func(int64, error) { t.Error("OnError called for a cancelled Observe") },
	}
	quiet.Observe(ctx, 1)
	waitFor(t, func() bool { return !quiet.waiting() })
}

// TestLookupDuringRebuilds runs lookups against rebuilds (for -race).
func TestLookupDuringRebuilds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &Live{Load: (&loader{}).load}
	if _, err := l.Refresh(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				if m, ok := l.Lookup([]byte("lake"), []byte("data/a/t/sub/x")); !ok || m.Table.ID != 3 {
					t.Error("a lookup missed during a rebuild")
					return
				}
			}
		}()
	}
	for s := int64(2); s < 50; s++ {
		l.Observe(ctx, s)
	}
	if _, err := l.Refresh(ctx, 50); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// waiting reports whether a rebuild is under way.
func (l *Live) waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running != nil
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
