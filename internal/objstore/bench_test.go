package objstore

import "testing"

func BenchmarkParseDir(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDir("s3://lake/data/sales/orders/"); err != nil {
			b.Fatal(err)
		}
	}
}
