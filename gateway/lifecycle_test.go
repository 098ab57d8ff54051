package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/sigv4"
)

// TestGracefulShutdown: Shutdown lets a request in flight finish (here an
// upload whose body is still arriving) and then stops.
func TestGracefulShutdown(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	m := e.mint(time.Hour, b+":data/:rw")
	host := strings.TrimPrefix(e.endpoint, "http://")
	body := strings.Repeat("z", 64<<10)
	r := &rawRequest{method: "PUT", path: "/" + b + "/data/inflight", payload: sigv4.UnsignedPayload, contentLength: int64(len(body))}
	head, _ := r.sign(host, m, time.Now())

	c := dialRaw(t, host, 20*time.Second)
	io.WriteString(c, head+body[:20<<10])
	time.Sleep(100 * time.Millisecond) // the handler is now streaming the body upstream

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- e.srv.Shutdown(ctx)
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	default:
	}
	// New connections are refused meanwhile.
	if c2, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		c2.SetDeadline(time.Now().Add(2 * time.Second))
		io.WriteString(c2, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if _, err := http.ReadResponse(bufio.NewReader(c2), nil); err == nil {
			t.Error("a new connection was served during shutdown")
		}
		c2.Close()
	}
	io.WriteString(c, body[20<<10:])
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("in-flight request answered %d", resp.StatusCode)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got, _ := e.getDirect(b, "data/inflight"); got != body {
		t.Fatalf("backend holds %d bytes, want %d", len(got), len(body))
	}
}

// patternReader yields n bytes of a repeating pattern without holding them.
type patternReader struct{ n, off int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// TestLargeObjectStreams: a large upload and download cross the gateway
// without being held in memory: the heap stays far below the object size.
func TestLargeObjectStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 × 128 MiB")
	}
	e := newEnv(t)
	b := e.bucket()
	m := e.mint(time.Hour, b+":data/:rw")
	host := strings.TrimPrefix(e.endpoint, "http://")
	const size = 128 << 20

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// Sampling starts after the GC: a sample of the heap before it would
	// count what earlier tests left behind.
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	r := &rawRequest{method: "PUT", path: "/" + b + "/data/large", payload: sigv4.UnsignedPayload, contentLength: size}
	head, _ := r.sign(host, m, time.Now())
	c := dialRaw(t, host, 120*time.Second)
	io.WriteString(c, head)
	if _, err := io.Copy(c, &patternReader{n: size}); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("put: %v %v", resp, err)
	}
	resp.Body.Close()

	g := &rawRequest{method: "GET", path: "/" + b + "/data/large", payload: sigv4.UnsignedPayload, contentLength: -1}
	head, _ = g.sign(host, m, time.Now())
	io.WriteString(c, head)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("get: %v %v", resp, err)
	}
	want := &patternReader{n: size}
	buf, wbuf := make([]byte, 256<<10), make([]byte, 256<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 {
			want.Read(wbuf[:k])
			if string(buf[:k]) != string(wbuf[:k]) {
				t.Fatalf("download differs at byte %d", n)
			}
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	resp.Body.Close()
	close(stop)
	<-sampled
	if n != size {
		t.Fatalf("downloaded %d bytes, want %d", n, size)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(peak.Load()) - int64(before.HeapInuse)
	t.Logf("heap in use: before %d KiB, peak %d KiB; allocated during the transfer %d KiB",
		before.HeapInuse>>10, peak.Load()>>10, (after.TotalAlloc-before.TotalAlloc)>>10)
	if grew > 32<<20 {
		t.Fatalf("heap grew by %d MiB while streaming %d MiB", grew>>20, size>>20)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Fatalf("allocated %d MiB while streaming %d MiB each way", alloc>>20, size>>20)
	}
}
