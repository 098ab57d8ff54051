package testsupport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Module is this repository's module path. [CheckNoLeaks] names packages
// relative to it.
const Module = "github.com/duckicelake/duckicelake"

// InCI reports whether the tests run under CI (CI=true, as .ci/run sets it),
// where every part of the stack must be present.
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// Missing reports that something the test needs is not there: under CI it
// fails the test, elsewhere it skips it. The message says what is missing
// and what provides it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatal("CI=true: " + msg)
	}
	t.Skip(msg)
}

// Root returns the repository root, the directory of go.mod above the
// package under test (go test runs a test binary in its package directory).
func Root(t testing.TB) string {
	t.Helper()
	root, err := rootDir()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Path returns a path inside the repository: Root joined with elem.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	return filepath.Join(append([]string{Root(t)}, elem...)...)
}

func rootDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repository root: %w", err)
	}
	for start := dir; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("repository root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root: no go.mod above %s", start)
		}
		dir = parent
	}
}
