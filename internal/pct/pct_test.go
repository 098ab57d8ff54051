package pct

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
)

func TestTables(t *testing.T) {
	for i := range 256 {
		c := byte(i)
		unreserved := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~'
		lower, lowerOK := byte(0), true
		switch {
		case '0' <= c && c <= '9':
			lower = c - '0'
		case 'a' <= c && c <= 'f':
			lower = c - 'a' + 10
		default:
			lowerOK = false
		}
		anyV, anyOK := lower, lowerOK
		if 'A' <= c && c <= 'F' {
			anyV, anyOK = c-'A'+10, true
		}
		if Unreserved(c) != unreserved {
			t.Errorf("%#x: Unreserved = %v", c, Unreserved(c))
		}
		if v, ok := UnhexLower(c); ok != lowerOK || ok && v != lower {
			t.Errorf("%#x: UnhexLower = %d, %v", c, v, ok)
		}
		if v, ok := Unhex(c); ok != anyOK || ok && v != anyV {
			t.Errorf("%#x: Unhex = %d, %v", c, v, ok)
		}
	}
}

func TestAppendDecode(t *testing.T) {
	tests := []struct {
		in        string
		plusSpace bool
		want      string
		ok        bool
	}{
		{"", false, "", true},
		{"abc", false, "abc", true},
		{"a%2Fb", false, "a/b", true},
		{"a%2fb", false, "a/b", true},
		{"%252F", false, "%2F", true}, // exactly once
		{"a+b", false, "a+b", true},
		{"a+b", true, "a b", true},
		{"%2B+", true, "+ ", true},
		{"%E2%82%AC", false, "€", true},
		{"%", false, "", false},
		{"a%2", false, "a", false},
		{"a%zz", false, "a", false},
		{"%2g", true, "", false},
		{"%00", false, "\x00", true},
	}
	for _, tt := range tests {
		got, ok := AppendDecode([]byte(">"), []byte(tt.in), tt.plusSpace)
		if ok != tt.ok || ok && string(got) != ">"+tt.want {
			t.Errorf("AppendDecode(%q, %v) = %q, %v; want %q, %v", tt.in, tt.plusSpace, got, ok, ">"+tt.want, tt.ok)
		}
		if Valid([]byte(tt.in)) != tt.ok {
			t.Errorf("Valid(%q) = %v", tt.in, !tt.ok)
		}
	}
}

func TestAppendEncode(t *testing.T) {
	tests := []struct {
		in        string
		keepSlash bool
		want      string
	}{
		{"", true, ""},
		{"data/a b+c.parquet", true, "data/a%20b%2Bc.parquet"},
		{"data/a", false, "data%2Fa"},
		{"A-Z_a~z.0", false, "A-Z_a~z.0"},
		{"€*?%", true, "%E2%82%AC%2A%3F%25"},
	}
	for _, tt := range tests {
		if got := AppendEncode(nil, []byte(tt.in), tt.keepSlash); string(got) != tt.want {
			t.Errorf("AppendEncode(%q, %v) = %q, want %q", tt.in, tt.keepSlash, got, tt.want)
		}
	}
}

func TestZeroAlloc(t *testing.T) {
	raw := []byte("data%2Fanalytics%2Fy%3D2026%2Fpart+00001.parquet")
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		d, _ := AppendDecode(buf[:0], raw, true)
		_ = AppendEncode(d[len(d):], d, true)
		_ = Valid(raw)
	})
	if n != 0 {
		t.Errorf("%.1f allocations per run", n)
	}
}

// FuzzAppendDecode holds the decoder against net/url's and the encoder's
// round trip.
func FuzzAppendDecode(f *testing.F) {
	for _, s := range []string{"", "a%2Fb", "%", "%zz", "a+b%2B", "%E2%82%AC", "%%41"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, plusSpace bool) {
		got, ok := AppendDecode(nil, []byte(raw), plusSpace)
		var want string
		var err error
		if plusSpace {
			want, err = url.QueryUnescape(raw)
		} else {
			// PathUnescape keeps '+'; it refuses nothing QueryUnescape takes.
			want, err = url.PathUnescape(raw)
		}
		if ok != (err == nil) {
			t.Fatalf("AppendDecode(%q, %v) ok=%v, net/url: %v", raw, plusSpace, ok, err)
		}
		if ok != Valid([]byte(raw)) {
			t.Fatalf("Valid(%q) disagrees with AppendDecode", raw)
		}
		if !ok {
			return
		}
		if string(got) != want {
			t.Fatalf("AppendDecode(%q, %v) = %q, net/url %q", raw, plusSpace, got, want)
		}
		enc := AppendEncode(nil, got, true)
		if strings.Contains(string(enc), "+") {
			t.Fatalf("encoding %q has a '+'", enc)
		}
		back, ok := AppendDecode(nil, enc, plusSpace)
		if !ok || !bytes.Equal(back, got) {
			t.Fatalf("round trip of %q: %q → %q, %v", got, enc, back, ok)
		}
	})
}

func BenchmarkAppendDecode(b *testing.B) {
	raw := []byte("data%2Fanalytics%2Fy%3D2026%2Fpart-00001.parquet")
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		buf, _ = AppendDecode(buf[:0], raw, false)
	}
}
