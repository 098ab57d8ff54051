package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DirStore is a Store over local paths ("/data/lake/…", file:///…), as a
// DuckLake catalog with a local DATA_PATH has them. Objects are files;
// a Put appears atomically (written to a temporary name beside it, then
// renamed).
type DirStore struct{}

// NewDir returns a DirStore.
func NewDir() DirStore { return DirStore{} }

func filePath(loc Location) string { return filepath.FromSlash(loc.Path()) }

// Get implements Store.
func (DirStore) Get(_ context.Context, loc Location, max int64) ([]byte, error) {
	if err := objectOf(loc, SchemeFile); err != nil {
		return nil, err
	}
	f, err := os.Open(filePath(loc))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", loc, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", loc, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", loc, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a file: %w", loc, ErrNotFound)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, at most %d are read: %w", loc, fi.Size(), max, ErrTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", loc, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is more than %d bytes: %w", loc, max, ErrTooLarge)
	}
	return b, nil
}

// Put implements Store: the file appears whole or not at all.
func (DirStore) Put(_ context.Context, loc Location, body []byte) error {
	if err := objectOf(loc, SchemeFile); err != nil {
		return err
	}
	path := filePath(loc)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("put %s: %w", loc, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("put %s: %w", loc, err)
	}
	_, err = tmp.Write(body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("put %s: %w", loc, err)
	}
	return nil
}

// Exists implements Store: whether a file is at loc.
func (DirStore) Exists(_ context.Context, loc Location) (bool, error) {
	if err := objectOf(loc, SchemeFile); err != nil {
		return false, err
	}
	fi, err := os.Stat(filePath(loc))
	switch {
	case err == nil:
		return fi.Mode().IsRegular(), nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", loc, err)
}

// Delete implements Store.
func (DirStore) Delete(_ context.Context, loc Location) error {
	if err := objectOf(loc, SchemeFile); err != nil {
		return err
	}
	if err := os.Remove(filePath(loc)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", loc, err)
	}
	return nil
}

// List implements Store: the files under dir, in key order.
func (DirStore) List(_ context.Context, dir Location, fn func(Object) error) error {
	dir, err := prefixOf(dir, SchemeFile, false)
	if err != nil {
		return err
	}
	var objs []Object
	err = filepath.WalkDir(filePath(dir), func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		l, perr := Parse(filepath.ToSlash(path))
		if perr != nil || !l.Within(dir) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		objs = append(objs, Object{Location: l, Size: fi.Size(), Modified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	// WalkDir goes depth first ("a/b/x" before "a/b.txt"); keys sort '.'
	// before '/'.
	slices.SortFunc(objs, func(a, b Object) int { return strings.Compare(a.Location.Key(), b.Location.Key()) })
	for _, o := range objs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// DeletePrefix implements Store: dir and everything under it go.
func (DirStore) DeletePrefix(_ context.Context, dir Location) error {
	dir, err := prefixOf(dir, SchemeFile, true)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filePath(dir)); err != nil {
		return fmt.Errorf("delete under %s: %w", dir, err)
	}
	return nil
}
