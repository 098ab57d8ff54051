package ducklake_test

import (
	"testing"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
)

// DuckDB's change lists quote names, inner quotes doubled: an entry we
// write must read back as DuckDB's own do.
func TestQuoteName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"orders", `"orders"`},
		{`this "table" contains quotes`, `"this ""table"" contains quotes"`},
		{`a.b,c`, `"a.b,c"`},
		{"", `""`},
	} {
		if got := ducklake.QuoteName(tc.in); got != tc.want {
			t.Errorf("QuoteName(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
