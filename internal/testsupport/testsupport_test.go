package testsupport

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRoot(t *testing.T) {
	mod, err := os.ReadFile(Path(t, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(mod), "\n"); first != "module "+Module {
		t.Errorf("%s starts %q, want module %s", Path(t, "go.mod"), first, Module)
	}
	if wd, _ := os.Getwd(); filepath.Join(Root(t), "internal", "testsupport") != wd {
		t.Errorf("Root = %s, from %s", Root(t), wd)
	}
}

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "TRUE": true, "": false, "false": false, "0": false, "yes": false} {
		t.Setenv("CI", v)
		if InCI() != want {
			t.Errorf("CI=%q: InCI = %v", v, !want)
		}
	}
}

func TestUnsetAndLoadStack(t *testing.T) {
	t.Setenv("DUCKICELAKE_TEST_S3_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("DUCKICELAKE_TEST_S3_ACCESS_KEY", "")
	t.Setenv("DUCKICELAKE_TEST_S3_SECRET_KEY", "s")
	t.Setenv("DUCKICELAKE_TEST_BUCKET", "")
	t.Setenv("DUCKICELAKE_TEST_S3_REGION", "")
	t.Setenv("DUCKICELAKE_TEST_PG_DSN", "postgres://x")
	if got, want := Unset(S3Part, PostgresPart), []string{"DUCKICELAKE_TEST_S3_ACCESS_KEY", "DUCKICELAKE_TEST_BUCKET"}; !slices.Equal(got, want) {
		t.Errorf("Unset = %v, want %v", got, want)
	}
	s := LoadStack()
	if s.S3.Endpoint != "http://127.0.0.1:1" || s.S3.SecretKey != "s" || s.S3.Region != "us-east-1" || s.Postgres != "postgres://x" {
		t.Errorf("LoadStack = %+v", s)
	}
}

func TestMintKey(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mint.key")
	if err := os.WriteFile(f, []byte("k20260101:abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if id, secret := (Gateway{MintKeys: f}).MintKey(t); id != "k20260101" || secret != "abcdef" {
		t.Errorf("MintKey = %q, %q", id, secret)
	}
}

// TestLeakedGoroutines: a goroutine running this package's code is found
// until it ends; the caller's own goroutine never is.
func TestLeakedGoroutines(t *testing.T) {
	self := []string{Module + "/internal/testsupport."}
	if got := leakedGoroutines(allStacks(), self); len(got) != 0 {
		t.Fatalf("before: %d goroutines found:\n%s", len(got), strings.Join(got, "\n\n"))
	}
	release, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		<-release
	}()
	if got := leakedGoroutines(allStacks(), self); len(got) != 1 || !strings.Contains(got[0], "TestLeakedGoroutines") {
		t.Errorf("a blocked goroutine: found %q", got)
	}
	if got := leakedGoroutines(allStacks(), []string{Module + "/internal/testsupportx."}); len(got) != 0 {
		t.Errorf("another package's prefix matches: %q", got)
	}
	close(release)
	<-done
	if !Eventually(func() bool { return len(leakedGoroutines(allStacks(), self)) == 0 }) {
		t.Error("the goroutine is still found after it ended")
	}
}

func TestGoroutineIn(t *testing.T) {
	const p = Module + "/internal/pgnotify."
	for _, tc := range []struct {
		stack string
		want  bool
	}{
		{"goroutine 7 [select]:\n" + Module + "/internal/pgnotify.(*Listener).Run(0xc0)\n\t/src/listener.go:10 +0x1", true},
		{"goroutine 8 [IO wait]:\nnet.(*conn).Read(0x1)\n\t/go/net.go:1 +0x1\ncreated by " + Module + "/internal/pgnotify.(*Listener).connect in goroutine 7\n\t/src/l.go:5 +0x2", true},
		{"goroutine 9 [chan receive]:\n" + Module + "/internal/pgnotify_test.TestX.func1()\n\t/src/x_test.go:3 +0x1", false},
		{"goroutine 10 [select]:\nnet/http.(*persistConn).readLoop(0x1)\n\t/go/transport.go:1 +0x1", false},
	} {
		if got := goroutineIn(tc.stack, []string{p}); got != tc.want {
			t.Errorf("goroutineIn(%q) = %v, want %v", tc.stack, got, tc.want)
		}
	}
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	if !Eventually(func() bool { return n.Add(1) == 5 }) || n.Load() != 5 {
		t.Errorf("Eventually stopped after %d calls, want 5", n.Load())
	}
}

func TestStart(t *testing.T) {
	var ran atomic.Bool
	stop := Start(t, "run", func(ctx context.Context) error {
		ran.Store(true)
		<-ctx.Done()
		return ctx.Err()
	})
	WaitFor(t, "run to start", ran.Load)
	stop()
	stop() // again, as the cleanup does
}

func TestRunJSON(t *testing.T) {
	var out struct{ A []int }
	RunJSON(t, exec.Command("sh", "-c", `echo '{"A": [1, 2]}'`), &out)
	if !slices.Equal(out.A, []int{1, 2}) {
		t.Errorf("decoded %+v", out)
	}
	RunJSON(t, exec.Command("true"), nil)
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/v/bin/python", "/repo/test/catalog/rest_duckdb.py", "host=x dbname=y", "s3://lake/"}, `rest_duckdb.py "host=x dbname=y" s3://lake/`},
		{[]string{"/bin/sh", "-c", "exit 1"}, `sh -c "exit 1"`},
		{[]string{"/v/bin/python", "x.py", strings.Repeat("a", 100)}, "x.py " + strings.Repeat("a", 77) + "..."},
	} {
		cmd := exec.Command(tc.args[0], tc.args[1:]...)
		if got := describe(cmd); got != tc.want {
			t.Errorf("describe(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestVersitygw(t *testing.T) {
	v := NewVersitygw(t, VersitygwOptions{Buckets: []string{"lake"}})
	if _, err := os.Stat(filepath.Join(v.Dir, "lake")); err != nil {
		t.Fatal(err)
	}
	// Anonymous: refused, but answered as S3.
	resp, err := http.Get(v.Endpoint + "/lake/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous GET: %d", resp.StatusCode)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(v.Endpoint + "/"); err == nil {
		t.Error("versitygw still answers after Close")
	}
}

func TestVersitygwBinMissing(t *testing.T) {
	t.Setenv("VERSITYGW_BIN", filepath.Join(t.TempDir(), "none"))
	if _, err := StartVersitygw(t.TempDir(), VersitygwOptions{}); !errors.Is(err, ErrNoVersitygw) {
		t.Errorf("StartVersitygw without the binary = %v, want ErrNoVersitygw", err)
	}
}

// TestProductionDoesNotImport: no binary the project ships links test
// support — testsupport, pgtest, or a fixture package such as govtest (those
// may import each other; a command may not reach them).
func TestProductionDoesNotImport(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}`, "./cmd/...")
	cmd.Dir = Root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps ./cmd/... listed %d packages; the check would prove nothing", len(deps))
	}
	for _, dep := range deps {
		if !strings.HasPrefix(dep, Module+"/") {
			continue
		}
		if strings.HasPrefix(dep, Module+"/internal/testsupport") || strings.HasSuffix(dep, "test") {
			t.Errorf("a command links the test-support package %s", dep)
		}
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.txt")
	Golden(t, path, []byte("one"), true)
	if b, err := os.ReadFile(path); err != nil || string(b) != "one" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	Golden(t, path, []byte("one"), false)
	var rec recordingTB
	Golden(&rec, path, []byte("two"), false)
	if !rec.failed {
		t.Error("a different output passes")
	}
}

// recordingTB is a testing.TB that records a failure instead of failing.
type recordingTB struct {
	testing.TB
	failed bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Errorf(string, ...any) { r.failed = true }
