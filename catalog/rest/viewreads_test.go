package rest

import (
	"slices"
	"strings"
	"testing"
)

func TestSQLNamespaces(t *testing.T) {
	for _, tt := range []struct {
		sql  string
		want []string
		err  bool
	}{
		{"SELECT * FROM hr.emp", []string{"hr"}, false},
		{`SELECT * FROM lake."hr".emp`, []string{"lake", "hr"}, false},
		{`SELECT * FROM "a""b".t`, []string{`a"b`}, false},
		{"SELECT e.id FROM emp e", []string{"e"}, false},
		{"SELECT * FROM hr /* c */ . emp", []string{"hr"}, false},
		{"SELECT t.* FROM t", nil, false}, // a star after the dot names no table
		{"SELECT 'hr.emp', 1.5 FROM t -- hr.x", nil, false},
		{"SELECT * FROM t;", nil, false},
		{"SELECT 'open", nil, true},
		{"SELECT 1; DROP TABLE x", nil, true},
		{"SELECT * FROM a.b.c.d", []string{"a", "b"}, false},
	} {
		got, err := sqlNamespaces(tt.sql)
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("sqlNamespaces(%q) = %q, %v; want %q (error %v)", tt.sql, got, err, tt.want, tt.err)
		}
	}
}

// FuzzSQLNamespaces: view SQL comes from clients; the scan never panics,
// and every name it reports is a name written in the SQL.
func FuzzSQLNamespaces(f *testing.F) {
	for _, s := range []string{"SELECT * FROM hr.emp", `select * from lake."h""r".t`, "a . b . c", "x.", ".x", "/* a.b */ c.d", "'a.b'", `"a".`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		got, err := sqlNamespaces(sql)
		if err != nil {
			return
		}
		for _, n := range got {
			if !strings.Contains(sql, n) && !strings.Contains(sql, strings.ReplaceAll(n, `"`, `""`)) {
				t.Errorf("sqlNamespaces(%q) reports %q, which the SQL does not contain", sql, n)
			}
		}
	})
}
