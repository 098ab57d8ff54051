package testsupport

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Relay is a TCP relay in front of a server — Postgres, an S3 backend —
// that a test can cut to inject an outage the client cannot tell from a
// real one: Cut closes every relayed connection and refuses new ones
// until Restore; Freeze silently drops the traffic of the open ones, as a
// network partition does.
type Relay struct {
	// Addr is the relay's host:port; point the client here.
	Addr string

	target string
	ln     net.Listener
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]*relayed // both ends of each relayed connection
	wg     sync.WaitGroup
}

// relayed is one relayed connection.
type relayed struct {
	frozen atomic.Bool
}

// NewRelay relays connections to target (host:port) until t ends.
func NewRelay(t testing.TB, target string) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]*relayed{}}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(func() {
		ln.Close()
		r.Cut()
		r.wg.Wait()
	})
	return r
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		if r.cut {
			r.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			r.mu.Unlock()
			c.Close()
			continue
		}
		rc := &relayed{}
		r.conns[c], r.conns[up] = rc, rc
		r.mu.Unlock()
		r.wg.Add(2)
		go r.pipe(rc, c, up)
		go r.pipe(rc, up, c)
	}
}

func (r *Relay) pipe(rc *relayed, dst, src net.Conn) {
	defer r.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !rc.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	// A frozen connection's other side stays open, as across a partition:
	// the server learns nothing of a client that left (Cut and the end of
	// the test still close it).
	src.Close()
	if !rc.frozen.Load() {
		dst.Close()
	}
	r.mu.Lock()
	delete(r.conns, src)
	r.mu.Unlock()
}

// Freeze silently drops all traffic of the connections open now, closing
// nothing; new connections are relayed as before.
func (r *Relay) Freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rc := range r.conns {
		rc.frozen.Store(true)
	}
}

// Cut drops every open connection and refuses new ones.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	for c := range r.conns {
		c.Close()
	}
}

// Restore accepts connections again.
func (r *Relay) Restore() {
	r.mu.Lock()
	r.cut = false
	r.mu.Unlock()
}
