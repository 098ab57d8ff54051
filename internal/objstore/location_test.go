package objstore

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in     string
		bucket string
		key    string
		scheme Scheme
		bad    bool
	}{
		{in: "s3://lake/data/a/t/f.parquet", bucket: "lake", key: "data/a/t/f.parquet", scheme: SchemeS3},
		{in: "s3a://lake/data/a/", bucket: "lake", key: "data/a/", scheme: SchemeS3},
		{in: "S3N://lake/x", bucket: "lake", key: "x", scheme: SchemeS3},
		{in: "s3://lake", bucket: "lake", key: "", scheme: SchemeS3},
		{in: "s3://lake/", bucket: "lake", key: "", scheme: SchemeS3},
		{in: "/data/lake/x.parquet", key: "data/lake/x.parquet", scheme: SchemeFile},
		{in: "file:///data/lake/", key: "data/lake/", scheme: SchemeFile},
		// Percent-encodings are literal key bytes: no one decodes them.
		{in: "s3://lake/data/a/%2e%2e/b", bucket: "lake", key: "data/a/%2e%2e/b", scheme: SchemeS3},
		{in: "s3://lake/data/a/..x/y", bucket: "lake", key: "data/a/..x/y", scheme: SchemeS3},
		{in: "s3://lake/data/a/x../y", bucket: "lake", key: "data/a/x../y", scheme: SchemeS3},
		{in: "s3://lake/data/a/.hidden", bucket: "lake", key: "data/a/.hidden", scheme: SchemeS3},
		// Also literal: an encoded slash, a query-like suffix, fullwidth
		// dots, spaces.
		{in: "s3://lake/data/a%2F..%2Fb/x", bucket: "lake", key: "data/a%2F..%2Fb/x", scheme: SchemeS3},
		{in: "s3://lake/data/a/x?y=..", bucket: "lake", key: "data/a/x?y=..", scheme: SchemeS3},
		{in: "s3://lake/data/a/\uff0e\uff0e/b", bucket: "lake", key: "data/a/\uff0e\uff0e/b", scheme: SchemeS3},
		{in: "s3://lake/data/a/.. /b", bucket: "lake", key: "data/a/.. /b", scheme: SchemeS3},
		{in: "S3://Lake/x/", bucket: "Lake", key: "x/", scheme: SchemeS3},

		{in: "s3://lake/data/a/..", bad: true},
		{in: "s3://lake/data/a/../", bad: true},
		{in: "s3://lake/data/a/x/..", bad: true},
		{in: "s3://lake/data/a/../b/s/f", bad: true},
		{in: "s3://lake/data/a/./t2", bad: true},
		{in: "s3://lake/./x", bad: true},
		{in: "s3://lake/..", bad: true},
		{in: "s3://lake/data//a", bad: true},
		{in: "s3://lake//x", bad: true},
		{in: "s3://lake/data/a\\..\\b", bad: true},
		{in: "s3://lake/data/a\x00b", bad: true},
		{in: "s3://lake/data/a\nb", bad: true},
		{in: "s3:///key", bad: true},
		{in: "s3://la ke/key", bad: true},
		{in: "s3://lake@evil/key", bad: true},
		{in: "gs://lake/key", bad: true},
		{in: "relative/path", bad: true},
		{in: "file://relative", bad: true},
		{in: "", bad: true},
		{in: "/data/../etc/passwd", bad: true},
		{in: "s3://lake/data/a/.", bad: true},
		{in: "s3://lake/data/a/./", bad: true},
		{in: "s3://lake/data/a//", bad: true},
		{in: "s3://lake/data/a/%2e%2e/../b", bad: true},
		{in: "s3://lake:9000/x", bad: true},
		{in: "s3://lake%2f/x", bad: true},
		{in: "file:////x", bad: true},
		{in: "file:/tmp/x", bad: true},
		{in: "s3:lake/x", bad: true},
		{in: "s3:/lake/x", bad: true},
		{in: "s3://lake/data\x7f/x", bad: true},
		{in: "s3://lake/data/a/\t/x", bad: true},
	}
	for _, tt := range tests {
		l, err := Parse(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", tt.in, l)
			} else if !errors.Is(err, ErrBadLocation) {
				t.Errorf("Parse(%q) error %v does not wrap ErrBadLocation", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if l.Bucket() != tt.bucket || l.Key() != tt.key || l.Scheme() != tt.scheme {
			t.Errorf("Parse(%q) = %q %q %d, want %q %q %d", tt.in, l.Bucket(), l.Key(), l.Scheme(), tt.bucket, tt.key, tt.scheme)
		}
		back, err := Parse(l.String())
		if err != nil || back != l {
			t.Errorf("Parse(%q).String() = %q does not read back: %v, %v", tt.in, l.String(), back, err)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		loc, dir string
		want     bool
	}{
		{"s3://lake/data/a/t/f.parquet", "s3://lake/data/a/t", true},
		{"s3://lake/data/a/t/f.parquet", "s3://lake/data/a/t/", true},
		{"s3://lake/data/a/t/metadata/v1.json", "s3://lake/data/a/", true},
		{"s3a://lake/data/a/t/f", "s3://lake/data/a/", true},
		{"s3://lake/data/a/t2/f", "s3://lake/data/a/t", false}, // a sibling with a longer name
		{"s3://lake/data/a/t", "s3://lake/data/a/t", false},    // a directory is not within itself
		{"s3://lake/data/a/t/", "s3://lake/data/a/t/", false},
		{"s3://lake/data/a/t/", "s3://lake/data/a/", true},
		{"s3://other/data/a/t/f", "s3://lake/data/a/", false}, // another bucket
		{"/data/a/t/f", "s3://lake/data/a/", false},           // another scheme
		{"/lake/data/a/t/f", "/lake/data/a", true},
		{"s3://lake/data/b/s/f", "s3://lake/data/a/", false},
		{"s3://lake/x", "s3://lake", true},
		{"s3://lake/data/A/t/f", "s3://lake/data/a/", false}, // keys are case-sensitive
		{"s3://lake/data/a/%2e%2e/b/f", "s3://lake/data/a/", true},
		{"s3://Lake/data/a/t/f", "s3://lake/data/a/", false}, // bucket names compare exactly
		{"S3://lake/data/a/t/f", "s3a://lake/data/a", true},  // schemes do not
		{"file:///lake/data/a/t", "/lake/data/a", true},
		{"/lake/data/a", "/lake/data/a/", false},
		{"/x", "/", true},
		{"s3://lake/data/a/t/", "s3://lake/data/a/t/x", false}, // a directory is not within its own subdirectory
	}
	for _, tt := range tests {
		l, err := Parse(tt.loc)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.loc, err)
		}
		d, err := Parse(tt.dir)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.dir, err)
		}
		if got := l.Within(d); got != tt.want {
			t.Errorf("%q.Within(%q) = %v, want %v", tt.loc, tt.dir, got, tt.want)
		}
	}
	// The case the catalog's two predicates disagreed on: commit.under
	// took "s3://b/t/x/.." to be inside "s3://b/t"; it is b/t itself. It
	// cannot even be parsed now, so nothing can decide it is inside.
	if _, err := Parse("s3://b/t/x/.."); err == nil {
		t.Error(`"s3://b/t/x/.." parsed`)
	}
	var zero Location
	if zero.Within(zero) || zero.Within(MustParse("s3://lake/")) {
		t.Error("the zero Location is within something")
	}
}

func TestRel(t *testing.T) {
	for _, tt := range []struct{ loc, dir, rel string }{
		{"s3://lake/data/a/t/metadata/v1.json", "s3://lake/data/a/t", "metadata/v1.json"},
		{"s3://lake/data/a/t/sub/", "s3://lake/data/a/", "t/sub/"},
		{"s3a://lake/data/a/t/f", "s3://lake/data/", "a/t/f"},
		{"/lake/data/a/t/f", "/lake/data/", "a/t/f"},
		{"s3://lake/data/a/t", "s3://lake/data/a/t", ""},
		{"s3://lake/data/a/t2/f", "s3://lake/data/a/t", ""},
		{"s3://other/data/a/t/f", "s3://lake/data/a", ""},
	} {
		rel, ok := MustParse(tt.loc).Rel(MustParse(tt.dir))
		if rel != tt.rel || ok != (tt.rel != "") {
			t.Errorf("%q.Rel(%q) = %q, %v; want %q", tt.loc, tt.dir, rel, ok, tt.rel)
		}
	}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"s3://lake/data/a/t", "s3://lake/data/a/t/", true},
		{"s3://lake/data/a/t", "s3://lake/data/a/t/sub", true},
		{"s3://lake/data/a/t/sub/", "s3://lake/data/a/t", true},
		{"s3://lake/data/a/t", "s3://lake/data/a/t2", false},
		{"s3://lake/data/a/t", "s3://other/data/a/t", false},
	}
	for _, tt := range tests {
		if got := Overlaps(MustParse(tt.a), MustParse(tt.b)); got != tt.want {
			t.Errorf("Overlaps(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestJoinDirBase(t *testing.T) {
	d := MustParse("s3://lake/data/a/t")
	l, err := d.Join("metadata/v1.metadata.json")
	if err != nil || l.String() != "s3://lake/data/a/t/metadata/v1.metadata.json" {
		t.Fatalf("Join = %v, %v", l, err)
	}
	if !l.Within(d) || l.Dir().String() != "s3://lake/data/a/t/metadata/" || l.Base() != "v1.metadata.json" {
		t.Errorf("Within %v, Dir %v, Base %q", l.Within(d), l.Dir(), l.Base())
	}
	for _, rel := range []string{"../b/x", "/abs", "a//b", "./x", "x/.."} {
		if l, err := d.Join(rel); err == nil {
			t.Errorf("Join(%q) = %v", rel, l)
		}
	}
	if got := MustParse("s3://lake/x").Dir(); got.String() != "s3://lake/" {
		t.Errorf("Dir of a top-level key = %v", got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"s3://lake/data/a/t/f", "s3://lake/data/a/../b", "/x/y", "file:///x/", "s3a://b/%2e%2e/k"} {
		f.Add(s, "s3://lake/data/a/")
	}
	f.Fuzz(func(t *testing.T, s, dir string) {
		l, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(l.String())
		if err != nil || back != l {
			t.Fatalf("%q → %q does not read back: %v", s, l.String(), err)
		}
		for _, seg := range splitKey(l.Key()) {
			if seg == "." || seg == ".." || seg == "" {
				t.Fatalf("%q parsed with segment %q", s, seg)
			}
		}
		d, err := Parse(dir)
		if err != nil {
			return
		}
		if l.Within(d) {
			if l.Scheme() != d.Scheme() || l.Bucket() != d.Bucket() || len(l.Key()) <= len(d.AsDir().Key()) {
				t.Fatalf("%q within %q", s, dir)
			}
		}
		// Rel agrees with Within and puts the location back together;
		// Overlaps is symmetric.
		if rel, ok := l.Rel(d); ok != l.Within(d) {
			t.Fatalf("%q.Rel(%q) ok = %v, Within = %v", s, dir, ok, l.Within(d))
		} else if ok {
			if back, err := d.Join(rel); err != nil || back != l {
				t.Fatalf("%q.Join(%q) = %v, %v; want %q", dir, rel, back, err, s)
			}
		}
		if Overlaps(l, d) != Overlaps(d, l) {
			t.Fatalf("Overlaps(%q, %q) is not symmetric", s, dir)
		}
	})
}

func splitKey(k string) []string {
	if k == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(k, "/"), "/")
}
