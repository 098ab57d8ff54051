package bounded

import "testing"

func TestMapResetsAtItsBound(t *testing.T) {
	m := Map[int, string]{Max: 2}
	m.Put(1, "a")
	m.Put(2, "b")
	if v, ok := m.Get(2); !ok || v != "b" {
		t.Fatalf("Get(2) = %q, %v", v, ok)
	}
	m.Put(3, "c") // at the bound: starts again
	if _, ok := m.Get(1); ok {
		t.Fatal("entry 1 kept past the bound")
	}
	if v, ok := m.Get(3); !ok || v != "c" {
		t.Fatalf("Get(3) = %q, %v", v, ok)
	}
}

func BenchmarkMapHit(b *testing.B) {
	m := Map[string, int]{Max: 16}
	m.Put("k", 1)
	b.ReportAllocs()
	for b.Loop() {
		m.Get("k")
	}
}
