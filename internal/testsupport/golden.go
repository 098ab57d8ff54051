package testsupport

import (
	"bytes"
	"os"
	"testing"
)

// Golden compares got with the golden file at path, or with update (a
// test binary's -update flag, which each package defines: flags are per
// binary) rewrites the file with it.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got: %q\nwant: %q", path, got, want)
	}
}
