package objstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemStore is a Store in memory, for tests and dry runs: it serves every
// scheme, and counts its Puts.
type MemStore struct {
	mu      sync.Mutex
	objects map[Location][]byte
	puts    int
}

// NewMem returns an empty MemStore.
func NewMem() *MemStore { return &MemStore{objects: map[Location][]byte{}} }

func memObject(loc Location) error {
	if loc.IsZero() {
		return &LocationError{Reason: "no location"}
	}
	if loc.IsDir() {
		return &LocationError{Location: loc.String(), Reason: "it names a directory, not an object"}
	}
	return nil
}

// Get implements Store; it returns a copy.
func (m *MemStore) Get(_ context.Context, loc Location, max int64) ([]byte, error) {
	if err := memObject(loc); err != nil {
		return nil, err
	}
	m.mu.Lock()
	b, ok := m.objects[loc]
	m.mu.Unlock()
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: %w", loc, ErrNotFound)
	case int64(len(b)) > max:
		return nil, fmt.Errorf("%s is %d bytes, at most %d are read: %w", loc, len(b), max, ErrTooLarge)
	}
	return bytes.Clone(b), nil
}

// Put implements Store; it stores a copy.
func (m *MemStore) Put(_ context.Context, loc Location, body []byte) error {
	if err := memObject(loc); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[loc] = bytes.Clone(body)
	m.puts++
	return nil
}

// Exists implements Store.
func (m *MemStore) Exists(_ context.Context, loc Location) (bool, error) {
	if err := memObject(loc); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.objects[loc]
	return ok, nil
}

// Delete implements Store.
func (m *MemStore) Delete(_ context.Context, loc Location) error {
	if err := memObject(loc); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.objects, loc)
	m.mu.Unlock()
	return nil
}

// List implements Store.
func (m *MemStore) List(_ context.Context, dir Location, fn func(Object) error) error {
	m.mu.Lock()
	var objs []Object
	for l, b := range m.objects {
		if l.Within(dir) {
			objs = append(objs, Object{Location: l, Size: int64(len(b)), Modified: time.Time{}})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(objs, func(a, b Object) int { return strings.Compare(a.Location.String(), b.Location.String()) })
	for _, o := range objs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// DeletePrefix implements Store.
func (m *MemStore) DeletePrefix(_ context.Context, dir Location) error {
	dir, err := prefixOf(dir, dir.Scheme(), true)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.objects, func(l Location, _ []byte) bool { return l.Within(dir) })
	return nil
}

// Set stores body at loc as Put does, for tests; it panics on a location
// Parse refuses.
func (m *MemStore) Set(loc string, body []byte) {
	if err := m.Put(context.Background(), MustParse(loc), body); err != nil {
		panic(err)
	}
}

// Object returns the object stored at loc; false when there is none or
// Parse refuses loc.
func (m *MemStore) Object(loc string) ([]byte, bool) {
	l, err := Parse(loc)
	if err != nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.objects[l]
	return b, ok
}

// Keys lists the stored locations, sorted.
func (m *MemStore) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.objects))
	for l := range m.objects {
		keys = append(keys, l.String())
	}
	slices.Sort(keys)
	return keys
}

// Puts counts Put calls (and Sets).
func (m *MemStore) Puts() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}
