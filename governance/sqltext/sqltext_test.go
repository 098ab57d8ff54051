package sqltext

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestIdentString(t *testing.T) {
	for in, want := range map[string]string{
		"email": `"email"`, `we"ird`: `"we""ird"`, "select": `"select"`, "": `""`,
		`x"; DROP TABLE t; --`: `"x""; DROP TABLE t; --"`,
	} {
		if got, err := Ident(in); err != nil || got != want {
			t.Errorf("Ident(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"it's": `'it''s'`, `a\b`: `'a\b'`, "": `''`} {
		if got, err := String(in); err != nil || got != want {
			t.Errorf("String(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Ident("a\x00b"); !errors.Is(err, ErrNUL) {
		t.Errorf("Ident with NUL: %v", err)
	}
	if _, err := String("a\x00b"); !errors.Is(err, ErrNUL) {
		t.Errorf("String with NUL: %v", err)
	}
	if q, _ := Qualified("analytics", `cu"st`); q != `"analytics"."cu""st"` {
		t.Errorf("Qualified = %s", q)
	}
}

func TestLexRefuses(t *testing.T) {
	for _, body := range []string{
		"val; DROP TABLE x", "left(val, 2", "val)", "'unterminated", `"unterminated`,
		"/* open", "/* /* nested */", "$tag$ open", "a\x00b", "[1, 2)", "E'\\'",
	} {
		if toks, err := Lex(body); err == nil {
			t.Errorf("Lex(%q) = %v, want an error", body, toks)
		}
	}
	if _, err := Lex(strings.Repeat("(", MaxDepth+1) + strings.Repeat(")", MaxDepth+1)); err == nil {
		t.Error("deep nesting accepted")
	}
}

func TestLexRoundTrip(t *testing.T) {
	for _, body := range []string{
		"left(val, 2) || '***'",
		"regexp_replace(val, '[^@]+', '***')",
		"CASE WHEN val IS NULL THEN NULL ELSE 'x;y' END",
		`"val" || E'\'' || $q$ ; ) $q$ -- ; (`,
		"/* a /* nested; */ comment */ val::VARCHAR",
		"val >= 1.5e3 AND val <> .5 AND val != 0x1F",
	} {
		toks, err := Lex(body)
		if err != nil {
			t.Errorf("Lex(%q): %v", body, err)
			continue
		}
		if Join(toks) != body {
			t.Errorf("Join(Lex(%q)) = %q", body, Join(toks))
		}
	}
}

func TestSubstitute(t *testing.T) {
	tests := []struct {
		body string
		repl map[string]string
		want string
	}{
		{"left(val, 2) || '***'", map[string]string{"val": `"email"`}, `left(("email"), 2) || '***'`},
		{"VAL", map[string]string{"val": `"c"`}, `("c")`},
		// Inside literals, quoted names of other things, comments: untouched.
		{"'val' || val -- val", map[string]string{"val": `"c"`}, `'val' || ("c")  `},
		{"val /* ) */ + 1", map[string]string{"val": `"c"`}, `("c")   + 1`},
		{`s.val + val`, map[string]string{"val": `"c"`}, `s.val + ("c")`},
		{`val(1) + val`, map[string]string{"val": `"c"`}, `val(1) + ("c")`},
		{`f(val := 1, x => val)`, map[string]string{"val": `"c"`}, `f(val := 1, x => ("c"))`},
		{`val::VARCHAR = val`, map[string]string{"val": `"c"`}, `("c")::VARCHAR = ("c")`},
		{`"val" = 'x'`, map[string]string{"val": `"c"`}, `("c") = 'x'`},
		{`"Val" = 'x'`, map[string]string{"val": `"c"`}, `("c") = 'x'`},
		{`country = 'EU' AND mrr >= 2000`, map[string]string{"country": `"region"`},
			`("region") = 'EU' AND mrr >= 2000`},
		{`date >= DATE '2024-01-01'`, map[string]string{"date": `"d"`}, `("d") >= DATE '2024-01-01'`},
		{`list_transform(l, lambda x: x + val)`, map[string]string{"x": `"no"`, "val": `"c"`},
			`list_transform(l, lambda x: ("no") + ("c"))`},
	}
	for _, tt := range tests {
		toks, err := Lex(tt.body)
		if err != nil {
			t.Fatalf("Lex(%q): %v", tt.body, err)
		}
		if got := Substitute(toks, tt.repl); got != tt.want {
			t.Errorf("Substitute(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestRefs(t *testing.T) {
	toks, err := Lex(`country = 'EU' AND "MRR" >= 2000 AND lower(email) LIKE '%@x' AND country IS NOT NULL AND date '2024-01-01' < ts`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Refs(toks), []string{"country", "mrr", "email", "ts"}; !slices.Equal(got, want) {
		t.Errorf("Refs = %v, want %v", got, want)
	}
}

// FuzzSubstitute checks what generated SQL relies on: a body Lex accepts
// re-lexes after substitution, keeps every literal as it was, loses its
// comments, and has no statement separator outside literals. Spliced into
// parentheses, it stays inside them.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"left(val, 2) || '***'", `"val" || E'\'' || $q$;$q$`, "val::int = val -- ;", "/* */val"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		toks, err := Lex(body)
		if err != nil {
			return
		}
		if Join(toks) != body {
			t.Fatalf("tokens do not join back to %q", body)
		}
		out := Substitute(toks, map[string]string{"val": `"col ""x"""`})
		back, err := Lex(out)
		if err != nil {
			t.Fatalf("substituted %q → %q does not lex: %v", body, out, err)
		}
		var lits, backLits []string
		for _, tk := range toks {
			if tk.Kind == KindString {
				lits = append(lits, tk.Text)
			}
		}
		for _, tk := range back {
			if tk.Kind == KindString {
				backLits = append(backLits, tk.Text)
			}
			if tk.Kind == KindComment {
				t.Fatalf("%q: a comment survived substitution", out)
			}
			if tk.Kind == KindPunct && tk.Text == ";" {
				t.Fatalf("%q: separator after substitution", out)
			}
		}
		if !slices.Equal(lits, backLits) {
			t.Fatalf("literals changed: %q → %q", lits, backLits)
		}
		if _, err := Lex("(" + out + ") AND x"); err != nil {
			t.Fatalf("spliced %q: %v", out, err)
		}
	})
}
