package materialize

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/objstore"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// countingWriter counts calls to a Store.
type countingWriter struct {
	objstore.Store
	exists, puts atomic.Int64
}

func (w *countingWriter) Exists(ctx context.Context, loc objstore.Location) (bool, error) {
	w.exists.Add(1)
	return w.Store.Exists(ctx, loc)
}

func (w *countingWriter) Put(ctx context.Context, loc objstore.Location, body []byte) error {
	w.puts.Add(1)
	return w.Store.Put(ctx, loc, body)
}

// gatedSource counts History calls and, while gate is open, blocks them.
type gatedSource struct {
	h     *History
	calls atomic.Int64
	gate  chan struct{} // nil: never blocks
	fail  atomic.Int64  // fail this many calls first
}

func (s *gatedSource) History(ctx context.Context, tableID, snap int64) (*History, error) {
	s.calls.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	if s.fail.Add(-1) >= 0 {
		return nil, errors.New("catalog unavailable")
	}
	return eventsHistory(), nil
}

func TestMaterializerWritesOnceAndCaches(t *testing.T) {
	ctx := context.Background()
	mem := objstore.NewMem()
	w := &countingWriter{Store: mem}
	src := &gatedSource{}
	m := NewMaterializer(Config{Source: src, Writer: w})

	r5, err := m.Materialize(ctx, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	out5 := buildEvents(t, 5)
	if int(w.puts.Load()) != len(out5.Files) || len(mem.Keys()) != len(out5.Files) {
		t.Fatalf("%d puts, %d objects; want %d files", w.puts.Load(), len(mem.Keys()), len(out5.Files))
	}
	if body, ok := mem.Object(r5.MetadataLocation); !ok || string(body) != string(r5.MetadataJSON) {
		t.Error("the metadata JSON is not stored at its location")
	}
	// Cached: no second build, no more writes.
	if again, _ := m.Materialize(ctx, 1, 5); again != r5 || m.Builds() != 1 || src.calls.Load() != 1 {
		t.Errorf("second call: builds %d, source calls %d", m.Builds(), src.calls.Load())
	}
	// Snapshot 6 shares most files with 5: only new ones are checked and put.
	exists := w.exists.Load()
	if _, err := m.Materialize(ctx, 1, 6); err != nil {
		t.Fatal(err)
	}
	out6 := buildEvents(t, 6)
	shared := 0
	for _, f := range out6.Files {
		if _, ok := fileMap(out5)[f.Location]; ok {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("snapshots 5 and 6 share no file")
	}
	if got, want := w.exists.Load()-exists, int64(len(out6.Files)-shared); got != want {
		t.Errorf("snapshot 6: %d existence checks, want %d (files not known yet)", got, want)
	}
	// A fresh Materializer over the same store finds everything written.
	w2 := &countingWriter{Store: mem}
	if _, err := NewMaterializer(Config{Source: src, Writer: w2}).Materialize(ctx, 1, 6); err != nil {
		t.Fatal(err)
	}
	if w2.puts.Load() != 0 {
		t.Errorf("a cold Materializer rewrote %d existing files", w2.puts.Load())
	}
}

func TestMaterializerOneBuildPerKey(t *testing.T) {
	src := &gatedSource{gate: make(chan struct{})}
	m := NewMaterializer(Config{Source: src, Writer: objstore.NewMem()})
	var wg sync.WaitGroup
	results := make([]*Result, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Materialize(context.Background(), 1, 6)
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	testsupport.WaitFor(t, "the first build to start", func() bool { return m.Builds() > 0 })
	time.Sleep(20 * time.Millisecond) // let the others join the flight
	close(src.gate)
	wg.Wait()
	if m.Builds() != 1 || src.calls.Load() != 1 {
		t.Errorf("%d builds, %d source calls for 16 concurrent requests", m.Builds(), src.calls.Load())
	}
	for _, r := range results {
		if r != results[0] {
			t.Fatal("callers got different results")
		}
	}
}

func TestMaterializerCallerGivesUp(t *testing.T) {
	src := &gatedSource{gate: make(chan struct{})}
	m := NewMaterializer(Config{Source: src, Writer: objstore.NewMem()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := m.Materialize(ctx, 1, 6); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Materialize = %v, want the deadline", err)
	}
	close(src.gate) // the build goes on and lands in the cache
	testsupport.WaitFor(t, "the abandoned build to land in the cache", func() bool { _, ok := m.Cached(1, 6); return ok })
}

func TestMaterializerErrorsAndEviction(t *testing.T) {
	ctx := context.Background()
	src := &gatedSource{}
	src.fail.Store(1)
	m := NewMaterializer(Config{Source: src, Writer: objstore.NewMem(), CacheEntries: 2})
	if _, err := m.Materialize(ctx, 1, 6); err == nil {
		t.Fatal("the failing source did not fail")
	}
	if _, err := m.Materialize(ctx, 1, 6); err != nil {
		t.Fatalf("an error was cached: %v", err)
	}
	for _, s := range []int64{5, 4} {
		if _, err := m.Materialize(ctx, 1, s); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := m.Cached(1, 6); ok {
		t.Error("the least recently used entry was not evicted")
	}
	if _, ok := m.Cached(1, 4); !ok {
		t.Error("the newest entry is missing")
	}
}

type failingWriter struct{ *objstore.MemStore }

func (w *failingWriter) Put(ctx context.Context, loc objstore.Location, body []byte) error {
	if filepath.Ext(loc.Key()) == ".avro" {
		return fmt.Errorf("disk full")
	}
	return w.MemStore.Put(ctx, loc, body)
}

func TestMaterializerWriteFailure(t *testing.T) {
	w := &failingWriter{MemStore: objstore.NewMem()}
	m := NewMaterializer(Config{Source: &gatedSource{}, Writer: w})
	if _, err := m.Materialize(context.Background(), 1, 6); err == nil {
		t.Fatal("a failed upload went unnoticed")
	}
	for _, k := range w.Keys() {
		if filepath.Ext(k) == ".json" {
			t.Errorf("metadata %s was stored although its manifests were not", k)
		}
	}
	if _, ok := m.Cached(1, 6); ok {
		t.Error("a failed build was cached")
	}
}
