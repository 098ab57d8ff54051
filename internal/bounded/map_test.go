package bounded

import (
	"fmt"
	"testing"
)

func TestMapResetsAtItsBound(t *testing.T) {
	m := Map[int, string]{Max: 2}
	m.Put(1, "a")
	m.Put(2, "b")
	if v, ok := m.Get(2); !ok || v != "b" {
		t.Fatalf("Get(2) = %q, %v", v, ok)
	}
	m.Put(2, "B") // a replaced entry needs no room
	if _, ok := m.Get(1); !ok || m.Len() != 2 {
		t.Fatalf("replacing an entry at the bound reset the map (len %d)", m.Len())
	}
	m.Put(3, "c") // a new key at the bound: starts again
	if _, ok := m.Get(1); ok {
		t.Fatal("entry 1 kept past the bound")
	}
	if v, ok := m.Get(3); !ok || v != "c" || m.Len() != 1 {
		t.Fatalf("Get(3) = %q, %v; len %d", v, ok, m.Len())
	}
}

func TestMapDeleteFunc(t *testing.T) {
	m := Map[int, string]{Max: 10}
	for i := range 6 {
		m.Put(i, fmt.Sprint(i))
	}
	m.DeleteFunc(func(k int, _ string) bool { return k%2 == 0 })
	for i := range 6 {
		if _, ok := m.Get(i); ok != (i%2 == 1) {
			t.Errorf("entry %d kept = %v", i, ok)
		}
	}
	var empty Map[int, string]
	empty.DeleteFunc(func(int, string) bool { return true }) // never used: no panic
}

func TestStringsBytes(t *testing.T) {
	s := Strings[int]{Map[string, int]{Max: 4}}
	k := []byte("token")
	s.PutBytes(k, 7)
	k[0] = 'T' // the map kept a copy
	if v, ok := s.Get("token"); !ok || v != 7 {
		t.Fatalf(`Get("token") = %d, %v`, v, ok)
	}
	if _, ok := s.GetBytes(k); ok {
		t.Fatal("GetBytes found a key never stored")
	}
	if v, ok := s.GetBytes([]byte("token")); !ok || v != 7 {
		t.Fatalf("GetBytes = %d, %v", v, ok)
	}
}

func TestStringsGetBytesAllocatesNothing(t *testing.T) {
	s := Strings[int]{Map[string, int]{Max: 4}}
	k := []byte("a key longer than the thirty-two bytes a stack buffer holds")
	s.PutBytes(k, 1)
	if n := testing.AllocsPerRun(100, func() { s.GetBytes(k) }); n != 0 {
		t.Errorf("a hit allocates %v times", n)
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
