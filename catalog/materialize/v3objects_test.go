package materialize

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestObjectReaders: the S3 reader on a real versitygw and the local one
// return what was stored and os.ErrNotExist for what was not.
func TestObjectReaders(t *testing.T) {
	ctx := context.Background()
	client := versitygw(t, "lake")
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		w      ObjectWriter
		r      ObjectReader
		prefix string
	}{
		{"s3", S3Writer{Client: client}, S3Reader{Client: client}, "s3://lake/main/t/"},
		{"dir", DirWriter{}, DirWriter{}, "file://" + filepath.ToSlash(dir) + "/main/t/"},
		{"mem", NewMemWriter(), nil, "s3://x/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			if r == nil {
				r = tc.w.(*MemWriter)
			}
			loc := tc.prefix + "a-delete.parquet"
			if err := tc.w.PutObject(ctx, loc, []byte("body")); err != nil {
				t.Fatal(err)
			}
			got, err := r.GetObject(ctx, loc)
			if err != nil || string(got) != "body" {
				t.Fatalf("GetObject: %q %v", got, err)
			}
			if _, err := r.GetObject(ctx, tc.prefix+"missing.parquet"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("missing object: %v, want os.ErrNotExist", err)
			}
		})
	}
}
