package testsupport

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// ErrNoVersitygw is the error of [StartVersitygw] when the versitygw binary
// is not there.
var ErrNoVersitygw = errors.New("no versitygw binary (scripts/versitygw.sh builds it)")

// VersitygwBin returns the versitygw binary the tests start:
// $VERSITYGW_BIN (scripts/test.sh sets it), else <repo>/bin/versitygw. The
// error wraps [ErrNoVersitygw] when it does not exist.
func VersitygwBin() (string, error) {
	bin := os.Getenv("VERSITYGW_BIN")
	if bin == "" {
		root, err := rootDir()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(root, "bin", "versitygw")
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoVersitygw, err)
	}
	return bin, nil
}

// VersitygwOptions configure a private versitygw. The zero value serves
// no bucket with test keys.
type VersitygwOptions struct {
	AccessKey, SecretKey string   // its root credential; default test keys
	Buckets              []string // created as directories before it starts
	Args                 []string // more flags, before "posix"
}

// Versitygw is a versitygw process in posix mode over a directory of its
// own, started by [StartVersitygw] or [NewVersitygw].
type Versitygw struct {
	Endpoint             string // http://127.0.0.1:PORT
	AccessKey, SecretKey string
	Region               string // us-east-1
	Dir                  string // the posix root: one directory per bucket

	cmd    *exec.Cmd
	output *SyncBuffer
	stop   func() error
}

// NewVersitygw starts a versitygw for t, stopped and removed when t ends.
// Without the binary the test is [Missing].
func NewVersitygw(t testing.TB, opts VersitygwOptions) *Versitygw {
	t.Helper()
	v, err := StartVersitygw(t.TempDir(), opts)
	if errors.Is(err, ErrNoVersitygw) {
		Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// StartVersitygw starts a versitygw serving dir, for callers that share one
// beyond a single test (a TestMain); [Versitygw.Close] stops it. It returns
// once the server answers HTTP.
func StartVersitygw(dir string, opts VersitygwOptions) (*Versitygw, error) {
	bin, err := VersitygwBin()
	if err != nil {
		return nil, err
	}
	if opts.AccessKey == "" {
		opts.AccessKey, opts.SecretKey = "testsupportroot", "testsupport-root-secret-0123456789"
	}
	for _, b := range opts.Buckets {
		if err := os.Mkdir(filepath.Join(dir, b), 0o755); err != nil {
			return nil, fmt.Errorf("versitygw bucket: %w", err)
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	v := &Versitygw{Endpoint: "http://" + addr, AccessKey: opts.AccessKey, SecretKey: opts.SecretKey, Region: "us-east-1",
		Dir: dir, output: &SyncBuffer{}}
	args := append([]string{"--port", addr, "--region", v.Region, "--keep-alive", "--quiet"}, opts.Args...)
	v.cmd = exec.Command(bin, append(args, "posix", dir)...)
	// The keys go in the environment, not on a command line others can read.
	v.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+v.AccessKey, "ROOT_SECRET_ACCESS_KEY="+v.SecretKey, "AWS_CA_BUNDLE=")
	v.cmd.Stdout, v.cmd.Stderr = v.output, v.output
	dieWithParent(v.cmd)
	if err := v.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	v.stop = sync.OnceValue(func() error {
		v.cmd.Process.Kill()
		v.cmd.Wait()
		return nil
	})
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(WaitTimeout); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := client.Get(v.Endpoint + "/"); err == nil {
			resp.Body.Close()
			return v, nil
		}
		if time.Now().After(deadline) {
			v.Close()
			return nil, fmt.Errorf("versitygw did not come up on %s: %s", addr, bytes.TrimSpace([]byte(v.output.String())))
		}
	}
}

// Close stops the process (the directory stays: its owner removes it).
func (v *Versitygw) Close() error { return v.stop() }

// FreeAddr returns a 127.0.0.1:port that nothing listened on a moment ago,
// for a server that must be told its address before it starts (or for an
// endpoint that must refuse connections).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
