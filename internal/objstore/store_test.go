package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// stackS3 is a root client for the test stack's S3 backend (versitygw,
// scripts/test.sh) and its bucket. Without the stack the test is skipped,
// or fails under CI.
func stackS3(t *testing.T) (*s3.Client, string) {
	t.Helper()
	st := testsupport.RequireStack(t, testsupport.S3Part)
	return s3test.Client(st.S3.Endpoint, st.S3.Region, st.S3.AccessKey, st.S3.SecretKey, "", s3test.Timeout(time.Minute)), st.S3.Bucket
}

// countingS3 counts DeleteObjects calls and remembers the largest batch.
type countingS3 struct {
	*s3.Client
	deletes, largest atomic.Int64
}

func (c *countingS3) DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	c.deletes.Add(1)
	if n := int64(len(in.Delete.Objects)); n > c.largest.Load() {
		c.largest.Store(n)
	}
	return c.Client.DeleteObjects(ctx, in, opts...)
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// storeCase is a Store under test, with a directory of its own to work in.
type storeCase struct {
	store Store
	root  Location // a fresh directory
	top   Location // the root of root's bucket or file system
	other Location // a location of a scheme the store does not serve (zero for none)
	s3    *countingS3
}

// storeCases makes each Store under test; the S3 one skips without the
// stack.
var storeCases = []struct {
	name string
	make func(t *testing.T) storeCase
}{
	{"mem", func(t *testing.T) storeCase {
		return storeCase{store: NewMem(), root: MustParse("s3://lake/objstore/" + randomHex() + "/"), top: MustParse("s3://lake/")}
	}},
	{"dir", func(t *testing.T) storeCase {
		return storeCase{store: NewDir(), root: MustParse(filepath.ToSlash(t.TempDir()) + "/root/"), top: MustParse("/"),
			other: MustParse("s3://lake/x")}
	}},
	{"s3", func(t *testing.T) storeCase {
		client, bucket := stackS3(t)
		c := &countingS3{Client: client}
		return storeCase{store: NewS3(c), s3: c, root: MustParse("s3://" + bucket + "/objstore-test/" + randomHex() + "/"),
			top: MustParse("s3://" + bucket + "/"), other: MustParse("/tmp/x")}
	}},
}

func join(t *testing.T, dir Location, rel string) Location {
	t.Helper()
	l, err := dir.Join(rel)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestStores: every Store returns what was put, one not-found error for
// what was not, the size cap, List in key order within the directory only
// (past one page of 1000 keys on S3), DeletePrefix of that directory only
// (in batches DeleteObjects takes) and never of a root.
func TestStores(t *testing.T) {
	ctx := context.Background()
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			tc := sc.make(t)
			s := tc.store
			obj := join(t, tc.root, "t/metadata/v1.metadata.json")
			if ok, err := s.Exists(ctx, obj); ok || err != nil {
				t.Fatalf("Exists before Put = %v, %v", ok, err)
			}
			if _, err := s.Get(ctx, obj, 1<<20); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get before Put: %v, want ErrNotFound", err)
			}
			body := []byte(`{"format-version":2}`)
			if err := s.Put(ctx, obj, body); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Exists(ctx, obj); !ok || err != nil {
				t.Fatalf("Exists after Put = %v, %v", ok, err)
			}
			if got, err := s.Get(ctx, obj, int64(len(body))); err != nil || string(got) != string(body) {
				t.Fatalf("Get = %q, %v", got, err)
			}
			if _, err := s.Get(ctx, obj, int64(len(body))-1); !errors.Is(err, ErrTooLarge) {
				t.Errorf("Get with a cap one byte short: %v, want ErrTooLarge", err)
			}
			if err := s.Put(ctx, obj, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Get(ctx, obj, 10); err != nil || string(got) != "{}" {
				t.Errorf("Get after a second Put = %q, %v", got, err)
			}
			gone := join(t, tc.root, "t/metadata/gone.json")
			if err := s.Put(ctx, gone, body); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, gone); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.Exists(ctx, gone); ok || err != nil {
				t.Errorf("Exists after Delete = %v, %v", ok, err)
			}
			if err := s.Delete(ctx, gone); err != nil {
				t.Errorf("Delete of a missing object: %v", err)
			}
			if err := s.Delete(ctx, obj.Dir()); !errors.Is(err, ErrBadLocation) {
				t.Errorf("Delete of a directory: %v, want ErrBadLocation", err)
			}
			for _, bad := range []Location{tc.root, obj.Dir(), {}} {
				if _, err := s.Get(ctx, bad, 10); !errors.Is(err, ErrBadLocation) {
					t.Errorf("Get(%q) = %v, want ErrBadLocation", bad, err)
				}
				if err := s.Put(ctx, bad, nil); !errors.Is(err, ErrBadLocation) {
					t.Errorf("Put(%q) = %v, want ErrBadLocation", bad, err)
				}
			}
			if !tc.other.IsZero() {
				if _, err := s.Get(ctx, tc.other, 10); !errors.Is(err, ErrBadLocation) {
					t.Errorf("Get(%q) = %v, want ErrBadLocation", tc.other, err)
				}
				if err := s.DeletePrefix(ctx, tc.other.Dir()); !errors.Is(err, ErrBadLocation) {
					t.Errorf("DeletePrefix(%q) = %v, want ErrBadLocation", tc.other.Dir(), err)
				}
			}
			if tc.s3 != nil {
				out, err := tc.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(obj.Bucket()), Key: aws.String(obj.Key())})
				if err != nil || aws.ToString(out.ContentType) != "application/json" {
					t.Errorf("content type of %s: %v, %v", obj, out, err)
				}
				if _, err := s.Get(ctx, MustParse("s3://no-such-bucket-"+randomHex()+"/k"), 10); !errors.Is(err, ErrNotFound) {
					t.Errorf("Get from a missing bucket: %v, want ErrNotFound", err)
				}
			}

			// More keys than one ListObjectsV2 page holds, a sibling
			// directory whose name extends t's, and one above t.
			const n = 1005
			table := join(t, tc.root, "t/")
			want := []string{obj.String()}
			var mu sync.Mutex
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(8)
			for i := range n {
				l := join(t, table, fmt.Sprintf("data/f%04d.parquet", i))
				mu.Lock()
				want = append(want, l.String())
				mu.Unlock()
				g.Go(func() error { return s.Put(gctx, l, []byte("x")) })
			}
			sibling, above := join(t, tc.root, "t2/data/f.parquet"), join(t, tc.root, "t.parquet")
			for _, l := range []Location{sibling, above} {
				g.Go(func() error { return s.Put(gctx, l, []byte("x")) })
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			// Keys sort "data/…" before "metadata/…".
			want = append(want[1:], want[0])
			var got []string
			if err := s.List(ctx, table, func(o Object) error {
				if o.Size <= 0 {
					t.Errorf("%s: size %d", o.Location, o.Size)
				}
				got = append(got, o.Location.String())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("List(%s): %d objects, want %d; first %v", table, len(got), len(want), got[:min(3, len(got))])
			}
			stop := errors.New("stop")
			calls := 0
			if err := s.List(ctx, table, func(Object) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
				t.Errorf("List with fn failing: %v after %d calls", err, calls)
			}

			for _, root := range []Location{tc.top, {}} {
				if err := s.DeletePrefix(ctx, root); !errors.Is(err, ErrBadLocation) {
					t.Errorf("DeletePrefix(%q) = %v, want a refusal", root, err)
				}
			}
			if err := s.DeletePrefix(ctx, MustParse(tc.root.String()+"t")); err != nil {
				t.Fatal(err)
			}
			left := 0
			if err := s.List(ctx, table, func(Object) error { left++; return nil }); err != nil || left != 0 {
				t.Errorf("after DeletePrefix: %d objects left, %v", left, err)
			}
			for _, l := range []Location{sibling, above} {
				if ok, err := s.Exists(ctx, l); !ok || err != nil {
					t.Errorf("DeletePrefix(t) took %s: %v, %v", l, ok, err)
				}
			}
			if tc.s3 != nil && (tc.s3.deletes.Load() < 2 || tc.s3.largest.Load() > deleteBatch) {
				t.Errorf("%d DeleteObjects calls, the largest of %d keys", tc.s3.deletes.Load(), tc.s3.largest.Load())
			}
			if err := s.DeletePrefix(ctx, tc.root); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMemStoreConveniences: what tests read a MemStore with.
func TestMemStoreConveniences(t *testing.T) {
	m := NewMem()
	m.Set("s3a://lake/b", []byte("2"))
	if err := m.Put(context.Background(), MustParse("s3://lake/a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(m.Keys()); got != "[s3://lake/a s3://lake/b]" || m.Puts() != 2 {
		t.Errorf("Keys %s, Puts %d", got, m.Puts())
	}
	if b, ok := m.Object("s3://lake/b"); !ok || string(b) != "2" {
		t.Errorf("Object = %q, %v", b, ok)
	}
	if _, ok := m.Object("s3://lake/../b"); ok {
		t.Error("Object of a bad location")
	}
}
