package creds

import (
	"strings"
	"testing"
)

func TestAllows(t *testing.T) {
	c := Claims{Grants: []Grant{
		{Bucket: "lake", Prefix: "data/analytics/", Access: Read | List},
		{Bucket: "lake", Prefix: "data/a", Access: Write},
		{Bucket: "lake", Prefix: "wild*/q?/100%/", Access: Read},
		{Bucket: "lake", Prefix: "ünïcode/ß/", Access: Read},
		{Bucket: "scratch", Prefix: "", Access: Read | Write | List},
	}}
	tests := []struct {
		access Access
		bucket string
		key    string
		want   bool
	}{
		{Read, "lake", "data/analytics/x.parquet", true},
		{Read, "lake", "data/analytics/", true},
		{Read, "lake", "data/analyticsX", false}, // prefix vs prefix2
		{Read, "lake", "data/analytics", false},
		{Read, "lake", "data/", false},
		{Read, "lake", "Data/analytics/x", false},        // case matters
		{Read, "lake", "data/analytics/../secret", true}, // literal: the gateway normalises nothing
		{Write, "lake", "data/analytics/x", true},        // via "data/a", literally
		{Write, "lake", "data/b", false},
		{Write, "lake", "data/ab", true}, // grant "data/a" is literal: it covers "data/ab"
		{Write, "lake", "data/a", true},
		{Write, "lake", "data/", false},
		{Read | Write, "lake", "data/analytics/x", false}, // no single grant has both
		{Read, "lake", "wild*/q?/100%/f", true},
		{Read, "lake", "wildcard/q?/100%/f", false}, // '*' is not a wildcard
		{Read, "lake", "wild*/qq/100%/f", false},    // '?' is not a wildcard
		{Read, "lake", "wild*/q?/100%25/f", false},  // '%' is not an escape
		{Read, "lake", "ünïcode/ß/x", true},
		{Read, "lake", "unicode/ß/x", false},
		{Read, "lake", "ünïcode/ss/x", false},
		{Read, "scratch", "anything", true},
		{Read, "scratch", "", true},
		{Write, "lakehouse", "data/a", false}, // bucket is exact
		{Write, "lak", "data/a", false},
		{Write, "", "data/a", false},
		{0, "scratch", "x", false},
	}
	for _, tt := range tests {
		if got := c.Allows(tt.access, []byte(tt.bucket), []byte(tt.key)); got != tt.want {
			t.Errorf("Allows(%s, %q, %q) = %v, want %v", tt.access, tt.bucket, tt.key, got, tt.want)
		}
	}
}

func TestAllowsList(t *testing.T) {
	c := Claims{Grants: []Grant{
		{Bucket: "lake", Prefix: "data/analytics/", Access: List},
		{Bucket: "lake", Prefix: "data/raw/", Access: Read | Write}, // no List
		{Bucket: "all", Prefix: "", Access: List},
	}}
	tests := []struct {
		bucket, prefix string
		want           bool
	}{
		{"lake", "data/analytics/", true},
		{"lake", "data/analytics/2026/", true},
		{"lake", "data/analytics/2026", true},
		{"lake", "data/analytics", false}, // shorter than the grant: would list data/analyticsX
		{"lake", "data/", false},
		{"lake", "", false},
		{"lake", "data/analyticsX/", false},
		{"lake", "data/raw/", false},
		{"all", "", true},
		{"all", "x/", true},
		{"other", "data/analytics/", false},
	}
	for _, tt := range tests {
		if got := c.AllowsList([]byte(tt.bucket), []byte(tt.prefix)); got != tt.want {
			t.Errorf("AllowsList(%q, %q) = %v, want %v", tt.bucket, tt.prefix, got, tt.want)
		}
	}
}

func TestParseGrant(t *testing.T) {
	tests := []struct {
		in      string
		want    Grant
		wantErr string
	}{
		{"lake:data/analytics/:rw", Grant{"lake", "data/analytics/", Read | Write | List}, ""},
		{"lake:data/analytics/:r", Grant{"lake", "data/analytics/", Read | List}, ""},
		{"lake:data/analytics/:w", Grant{"lake", "data/analytics/", Write}, ""},
		{"lake:data/analytics/:l", Grant{"lake", "data/analytics/", List}, ""},
		{"lake:data/analytics/:wl", Grant{"lake", "data/analytics/", Write | List}, ""},
		{"lake::r", Grant{"lake", "", Read | List}, ""},
		{"lake:a:b:c/:w", Grant{"lake", "a:b:c/", Write}, ""},
		{"lake:*/?%/:r", Grant{"lake", "*/?%/", Read | List}, ""},
		{"lake:data/:x", Grant{}, "unknown letter 'x'"},
		{"lake:data/:", Grant{}, "access is empty"},
		{"lake:data/", Grant{}, "want bucket:prefix:access"},
		{"lake", Grant{}, "want bucket:prefix:access"},
		{":data/:r", Grant{}, "bucket is empty"},
		{"la/ke:data/:r", Grant{}, "contains '/'"},
	}
	for _, tt := range tests {
		got, err := ParseGrant(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseGrant(%q) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseGrant(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		// String writes the bits back as letters; they parse to the same grant.
		if again, err := ParseGrant(got.String()); err != nil || again != got {
			t.Errorf("ParseGrant(%q.String() = %q) = %+v, %v", tt.in, got.String(), again, err)
		}
	}
}

func TestAccessString(t *testing.T) {
	tests := map[Access]string{0: "none", Read: "r", Write: "w", List: "l", Read | List: "rl", Read | Write | List: "rwl", 9: "r+0x8"}
	for a, want := range tests {
		if got := a.String(); got != want {
			t.Errorf("Access(%d).String() = %q, want %q", a, got, want)
		}
	}
}
