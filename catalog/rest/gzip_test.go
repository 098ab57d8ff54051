package rest

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	for _, tt := range []struct {
		h    string
		want bool
	}{
		{"", false},
		{"gzip", true},
		{"GZIP", true},
		{"gzip, deflate", true}, // requests, PyIceberg
		{"gzip, deflate, br, zstd", true},
		{"deflate, x-gzip", true},
		{"br", false},
		{"identity", false},
		{"*", true},
		{"*;q=0", false},
		{"gzip;q=0", false},
		{"gzip; q=0.000", false},
		{"gzip;q=0.001", true},
		{"gzip;q=1", true},
		{"gzip;q=0.5, *;q=0", true},
		{"*, gzip;q=0", false}, // an explicit refusal beats the wildcard
		{"gzip;q=0, *", false},
		{"gzipped", false},
		{" , ,gzip", true},
		{"gzip;level=9", true},
		{"gzip;q=", true}, // malformed q: not a refusal
	} {
		if got := acceptsGzip([]byte(tt.h)); got != tt.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

// FuzzAcceptsGzip: any header value is decided without a panic, and never
// accepts gzip without naming it or the wildcard.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip, deflate", "*;q=0", "gzip;q=0.000", "x-gzip;q=0.5, *"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		if acceptsGzip(h) {
			l := strings.ToLower(string(h))
			if !strings.Contains(l, "gzip") && !strings.Contains(l, "*") {
				t.Fatalf("accepts gzip from %q", h)
			}
		}
	})
}

// TestGzippedBelongsToItsBody: the compressed form decodes to the entry's
// body; an entry copied with another body (a governed stamp) but the
// original's slot gets none rather than the other body's bytes; small
// bodies are not compressed.
func TestGzippedBelongsToItsBody(t *testing.T) {
	body := bytes.Repeat([]byte(`{"metadata":{"snapshots":[1,2,3]}}`), 100)
	e := &loadEntry{}
	e.setBody(body)
	gz := e.gzipped()
	if gz == nil || len(gz) >= len(body) {
		t.Fatalf("gzipped: %d bytes of %d", len(gz), len(body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, body) {
		t.Fatalf("gzip does not decode to the body: %v", err)
	}
	if again := e.gzipped(); &again[0] != &gz[0] {
		t.Error("compressed twice")
	}

	stamped := *e
	stamped.body = bytes.Repeat([]byte(`{"metadata":{"masked":true}}`), 100)
	if got := stamped.gzipped(); got != nil {
		t.Fatal("a copy with another body served the original's compressed bytes")
	}
	same := *e // a revalidated copy: same body, shares the slot
	if got := same.gzipped(); got == nil || &got[0] != &gz[0] {
		t.Error("a copy with the same body does not share the compressed form")
	}
	small := &loadEntry{}
	small.setBody([]byte(`{}`))
	if small.gzipped() != nil {
		t.Error("a tiny body was compressed")
	}
	if (&loadEntry{body: body}).gzipped() != nil {
		t.Error("an entry without a slot was compressed")
	}
}
