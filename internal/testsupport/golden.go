package testsupport

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
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

// TestdataGolden is [Golden] for testdata/name, rewritten when the test
// binary's -update flag is set (the package defines it:
// flag.Bool("update", …); without one nothing is rewritten).
func TestdataGolden(t testing.TB, name string, got []byte) {
	t.Helper()
	update := false
	if f := flag.Lookup("update"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			update, _ = g.Get().(bool)
		}
	}
	Golden(t, filepath.Join("testdata", name), got, update)
}
