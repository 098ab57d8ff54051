package revoke

import (
	"fmt"
	"testing"
)

// storeWith is a Store holding n entries and nothing else: Revoked reads
// only the map, so the benchmark needs no database.
func storeWith(n int) *Store {
	m := make(map[string]int64, n)
	for i := range n {
		m[fmt.Sprintf("%032x", i)] = 1 << 40
	}
	s := &Store{}
	s.entries.Store(&m)
	return s
}

func BenchmarkRevoked(b *testing.B) {
	s := storeWith(10000)
	hit, miss := fmt.Sprintf("%032x", 4242), fmt.Sprintf("%032x", 1<<40)
	for _, bc := range []struct {
		name string
		id   string
		want bool
	}{{"hit", hit, true}, {"miss", miss, false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if s.Revoked(bc.id) != bc.want {
					b.Fatal("wrong answer")
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if s.Revoked(miss) {
					b.Fatal("wrong answer")
				}
			}
		})
	})
}

func TestRevokedDoesNotAllocate(t *testing.T) {
	s := storeWith(100)
	id := fmt.Sprintf("%032x", 7)
	if n := testing.AllocsPerRun(1000, func() { s.Revoked(id) }); n != 0 {
		t.Errorf("Revoked allocates %v times", n)
	}
}
