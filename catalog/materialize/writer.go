package materialize

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// ObjectWriter stores the files a materialisation produces. Keys are the
// absolute locations the metadata references ("s3://bucket/path/…").
// Outputs are immutable, so an implementation never needs to overwrite:
// the Materializer asks Exists first and writes only what is missing.
type ObjectWriter interface {
	PutObject(ctx context.Context, key string, body []byte) error
	Exists(ctx context.Context, key string) (bool, error)
}

// MemWriter is an in-memory ObjectWriter, for tests and dry runs.
type MemWriter struct {
	mu      sync.Mutex
	objects map[string][]byte
	puts    int
}

// NewMemWriter returns an empty MemWriter.
func NewMemWriter() *MemWriter { return &MemWriter{objects: map[string][]byte{}} }

// PutObject stores a copy of body under key.
func (w *MemWriter) PutObject(_ context.Context, key string, body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objects[key] = slices.Clone(body)
	w.puts++
	return nil
}

// Exists reports whether key was stored.
func (w *MemWriter) Exists(_ context.Context, key string) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.objects[key]
	return ok, nil
}

// Get returns the object stored under key.
func (w *MemWriter) Get(key string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.objects[key]
	return b, ok
}

// Keys lists the stored keys, sorted.
func (w *MemWriter) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, 0, len(w.objects))
	for k := range w.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Puts counts PutObject calls.
func (w *MemWriter) Puts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.puts
}

// ErrBadLocation reports a key an ObjectWriter cannot place.
var ErrBadLocation = errors.New("materialize: location not writable here")

// DirWriter writes locations that are local paths ("/data/…" or
// "file:///data/…"), as a DuckLake catalog with a local DATA_PATH has them.
// Files appear atomically (written to a temporary name, then renamed).
type DirWriter struct{}

func localPath(key string) (string, error) {
	if strings.HasPrefix(key, "file://") {
		u, err := url.Parse(key)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v", ErrBadLocation, key, err)
		}
		key = u.Path
	}
	if !filepath.IsAbs(key) {
		return "", fmt.Errorf("%w: %q is not a local absolute path", ErrBadLocation, key)
	}
	return filepath.Clean(key), nil
}

// PutObject writes body to the file at key.
func (DirWriter) PutObject(_ context.Context, key string, body []byte) error {
	path, err := localPath(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Exists reports whether the file at key exists.
func (DirWriter) Exists(_ context.Context, key string) (bool, error) {
	path, err := localPath(key)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	return false, err
}
