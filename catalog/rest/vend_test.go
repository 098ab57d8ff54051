package rest

import "testing"

// TestTableLocation: what vended credentials and remote signing are
// scoped to — a table's bucket and key prefix, always a directory — and
// the table paths they refuse, objstore.Parse's rule.
func TestTableLocationRefusesWhatParseRefuses(t *testing.T) {
	for _, tt := range []struct {
		in, bucket, prefix string
		ok                 bool
	}{
		{"s3://lake/data/s/t/", "lake", "data/s/t/", true},
		{"s3://lake/data/s/t", "lake", "data/s/t/", true},
		{"s3a://lake/data/s/t/", "lake", "data/s/t/", true},
		{"s3://lake/", "lake", "", true},
		{"s3://lake", "lake", "", true},
		{"s3:///x/", "", "", false},
		{"/tmp/data/", "", "", false},
		{"gs://b/x/", "", "", false},
		{"s3://lake/data/s/../t/", "", "", false},
		{"s3://lake/data/s/./t/", "", "", false},
		{"s3://lake/data//t/", "", "", false},
	} {
		b, p, ok := tableLocation(tt.in)
		if b != tt.bucket || p != tt.prefix || ok != tt.ok {
			t.Errorf("tableLocation(%q) = %q, %q, %v", tt.in, b, p, ok)
		}
	}
}
