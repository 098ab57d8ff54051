package materialize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// countingWriter counts calls to an ObjectWriter.
type countingWriter struct {
	ObjectWriter
	exists, puts atomic.Int64
}

func (w *countingWriter) Exists(ctx context.Context, key string) (bool, error) {
	w.exists.Add(1)
	return w.ObjectWriter.Exists(ctx, key)
}

func (w *countingWriter) PutObject(ctx context.Context, key string, body []byte) error {
	w.puts.Add(1)
	return w.ObjectWriter.PutObject(ctx, key, body)
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
	mem := NewMemWriter()
	w := &countingWriter{ObjectWriter: mem}
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
	if body, ok := mem.Get(r5.MetadataLocation); !ok || string(body) != string(r5.MetadataJSON) {
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
	w2 := &countingWriter{ObjectWriter: mem}
	if _, err := NewMaterializer(Config{Source: src, Writer: w2}).Materialize(ctx, 1, 6); err != nil {
		t.Fatal(err)
	}
	if w2.puts.Load() != 0 {
		t.Errorf("a cold Materializer rewrote %d existing files", w2.puts.Load())
	}
}

func TestMaterializerOneBuildPerKey(t *testing.T) {
	src := &gatedSource{gate: make(chan struct{})}
	m := NewMaterializer(Config{Source: src, Writer: NewMemWriter()})
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
	m := NewMaterializer(Config{Source: src, Writer: NewMemWriter()})
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
	m := NewMaterializer(Config{Source: src, Writer: NewMemWriter(), CacheEntries: 2})
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

type failingWriter struct{ *MemWriter }

func (w *failingWriter) PutObject(ctx context.Context, key string, body []byte) error {
	if filepath.Ext(key) == ".avro" {
		return fmt.Errorf("disk full")
	}
	return w.MemWriter.PutObject(ctx, key, body)
}

func TestMaterializerWriteFailure(t *testing.T) {
	w := &failingWriter{MemWriter: NewMemWriter()}
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

func TestDirWriter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var w DirWriter
	for _, key := range []string{filepath.Join(dir, "a", "b.avro"), "file://" + filepath.Join(dir, "c.json")} {
		if ok, err := w.Exists(ctx, key); ok || err != nil {
			t.Fatalf("Exists(%s) before = %v, %v", key, ok, err)
		}
		if err := w.PutObject(ctx, key, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if ok, err := w.Exists(ctx, key); !ok || err != nil {
			t.Fatalf("Exists(%s) after = %v, %v", key, ok, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "c.json")); string(b) != "x" {
		t.Errorf("file content %q", b)
	}
	for _, bad := range []string{"relative/x", "s3://b/k"} {
		if err := w.PutObject(ctx, bad, nil); !errors.Is(err, ErrBadLocation) {
			t.Errorf("PutObject(%q) = %v", bad, err)
		}
	}
}
