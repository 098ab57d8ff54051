package testsupport

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Do sends req with the default client and returns the status and the whole
// body; a transport error fails the test.
func Do(t testing.TB, req *http.Request) (status int, body string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Dial opens a TCP connection to addr whose reads and writes must all be
// done within d; the caller closes it.
func Dial(t testing.TB, addr string, d time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(d))
	return c
}
