package service

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"sales", "with space", "ünï", `quo"te`, "a.b", "_mask_x", "x__mask_"} {
		if err := CheckName("table", ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	// __mask_ names are governance's masking views', in any case.
	for _, bad := range []string{"", ".", "..", "a/b", "a\x1fb", "tab\tname", "\xff", strings.Repeat("x", 1025),
		"__mask_customers", "__MASK_x", "__Mask_"} {
		if err := CheckName("table", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestCheckProperties: a NUL byte or bytes that are not UTF-8 in a key or
// value are refused before Postgres sees them.
func TestCheckProperties(t *testing.T) {
	for _, bad := range []struct {
		props map[string]string
		keys  []string
	}{
		{props: map[string]string{"a\x00": "v"}},
		{props: map[string]string{"a": "v\x00"}},
		{props: map[string]string{"\xff": "v"}},
		{keys: []string{"k\x00"}},
	} {
		if err := CheckProperties(bad.props, bad.keys); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckProperties(%q, %q) = %v, want ErrInvalid", bad.props, bad.keys, err)
		}
	}
	if err := CheckProperties(map[string]string{"owner": "ünï"}, []string{"x"}); err != nil {
		t.Errorf("CheckProperties refused good text: %v", err)
	}
}
