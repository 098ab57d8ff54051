package rest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestUnescape(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"sales", "sales", true},
		{"a%1Fb", "a\x1fb", true},
		{"a%2fb", "a/b", true},
		{"a+b", "a+b", true},
		{"%E2%82%AC", "€", true},
		{"%", "", false},
		{"%1", "", false},
		{"%zz", "", false},
		{"ok%2", "", false},
	}
	for _, tt := range tests {
		got, err := unescape([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("unescape(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestDecodeNamespace(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{in: "sales", want: "sales"},
		{in: "with%20space", want: "with space"},
		{in: "a%1Fb", err: "2 levels"},
		{in: "a%1fb%1Fc", err: "3 levels"},
		{in: "", err: "empty namespace"},
		{in: "%zz", err: "percent-encoding"},
	} {
		got, err := decodeNamespace([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("decodeNamespace(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("decodeNamespace(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if err := checkNamespace([]string{"a", "b"}); err == nil || err.(*Error).Code != 400 {
		t.Errorf("checkNamespace([a b]) = %v, want a 400", err)
	}
	if err := checkNamespace(nil); err == nil {
		t.Error("checkNamespace(nil) accepted an empty namespace")
	}
}

func TestPaginate(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	args := func(q string) *fasthttp.Args {
		var a fasthttp.Args
		a.Parse(q)
		return &a
	}
	// No pageToken: everything, no next token.
	page, next, err := paginate(names, args("pageSize=2"))
	if err != nil || !slices.Equal(page, names) || next != nil {
		t.Fatalf("without pageToken: %v %v %v", page, next, err)
	}
	var all []string
	q := "pageToken=&pageSize=2"
	for i := 0; ; i++ {
		page, next, err := paginate(names, args(q))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == nil {
			break
		}
		if i > 5 {
			t.Fatal("pagination does not end")
		}
		q = "pageSize=2&pageToken=" + *next
	}
	if !slices.Equal(all, names) {
		t.Errorf("paged through %v, want %v", all, names)
	}
	for _, bad := range []string{"pageToken=&pageSize=0", "pageToken=&pageSize=x", "pageToken=!!"} {
		if _, _, err := paginate(names, args(bad)); err == nil {
			t.Errorf("paginate(%q) accepted it", bad)
		}
	}
}

func TestETagMatches(t *testing.T) {
	const tag = `"abc"`
	for _, tt := range []struct {
		inm  string
		want bool
	}{
		{`"abc"`, true},
		{`W/"abc"`, true},
		{`"x", "abc"`, true},
		{`*`, true},
		{`"abcd"`, false},
		{`abc`, false},
		{``, false},
	} {
		if got := etagMatches([]byte(tt.inm), tag); got != tt.want {
			t.Errorf("etagMatches(%q) = %v, want %v", tt.inm, got, tt.want)
		}
	}
}

func TestRefsOnly(t *testing.T) {
	meta := `{"format-version":2,"current-snapshot-id":3,
		"refs":{"main":{"snapshot-id":3,"type":"branch"},"v1":{"snapshot-id":1,"type":"tag"}},
		"snapshots":[{"snapshot-id":1},{"snapshot-id":2,"parent-snapshot-id":1},{"snapshot-id":3,"parent-snapshot-id":2}],
		"snapshot-log":[{"snapshot-id":1},{"snapshot-id":2},{"snapshot-id":3}]}`
	out, err := refsOnly([]byte(meta))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Current   int64 `json:"current-snapshot-id"`
		Snapshots []struct {
			ID int64 `json:"snapshot-id"`
		} `json:"snapshots"`
		Log []json.RawMessage `json:"snapshot-log"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, s := range doc.Snapshots {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []int64{1, 3}) || doc.Current != 3 || len(doc.Log) != 3 {
		t.Errorf("refsOnly kept snapshots %v (current %d, log %d)", ids, doc.Current, len(doc.Log))
	}
	if _, err := refsOnly([]byte(`{"snapshots":{}}`)); err == nil {
		t.Error("refsOnly accepted a malformed snapshots field")
	}
	// A table without snapshots stays without.
	out, err = refsOnly([]byte(`{"format-version":2,"refs":{}}`))
	if err != nil || !strings.Contains(string(out), `"snapshots":[]`) {
		t.Errorf("refsOnly of an empty table = %s, %v", out, err)
	}
}

func TestLoadKey(t *testing.T) {
	k := appendLoadKey(nil, formRefs, 42, "sales", "orders")
	ns, table, ok := splitLoadKey(string(k))
	if !ok || ns != "sales" || table != "orders" {
		t.Errorf("splitLoadKey = %q, %q, %v", ns, table, ok)
	}
	if string(appendLoadKey(nil, formAll, 42, "sales", "orders")) == string(k) ||
		string(appendLoadKey(nil, formRefs, 43, "sales", "orders")) == string(k) ||
		string(appendLoadKey(nil, formRefs, 42, "sale", "sorders")) == string(k) {
		t.Error("distinct loads share a key")
	}
}

func FuzzDecodeNamespace(f *testing.F) {
	for _, s := range []string{"sales", "a%1Fb", "%", "%E2%82%AC", "x%2Fy", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ns, err := decodeNamespace([]byte(in))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("decodeNamespace(%q): error %T is not an *Error", in, err)
			}
			return
		}
		if ns == "" || strings.Contains(ns, nsSeparator) {
			t.Fatalf("decodeNamespace(%q) = %q: empty or multi-level", in, ns)
		}
	})
}

// TestMayHoldSeparator: the fast path of multiLevel never says no to a
// segment that decodes to several levels.
func TestMayHoldSeparator(t *testing.T) {
	for in, want := range map[string]bool{
		"sales": false, "%E2%82%AC": false, "%1": false, "x%2Fy": false,
		"a%1Fb": true, "a%1fb": true, "a\x1fb": true, "%1F": true,
	} {
		if got := mayHoldSeparator([]byte(in)); got != want {
			t.Errorf("mayHoldSeparator(%q) = %v, want %v", in, got, want)
		}
		if _, multi := multiLevel([]byte(in)); multi && !mayHoldSeparator([]byte(in)) {
			t.Errorf("%q is multi-level but the fast path says not", in)
		}
	}
}
