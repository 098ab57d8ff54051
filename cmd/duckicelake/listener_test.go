package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// TestCatalogListenerLimits: the catalog listener answers the web server's
// own limits in the Iceberg ErrorModel, not fasthttp's plain text, and
// bounds the connections of one client address
// (catalog.max_connections_per_ip) — issue 14's listener weaknesses.
func TestCatalogListenerLimits(t *testing.T) {
	rs := startServe(t, serveEnv(t), "-catalog.max_connections_per_ip", "2")
	admin := strings.TrimPrefix(rs.admin, "http://")

	// roundTrip writes raw on a fresh connection and reads one response.
	roundTrip := func(raw string) (*http.Response, map[string]any) {
		t.Helper()
		c := testsupport.Dial(t, admin, 10*time.Second)
		defer c.Close()
		go io.WriteString(c, raw) // the server may answer before reading it all
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatalf("%d answer is not JSON: %q", resp.StatusCode, b)
		}
		return resp, body
	}
	model := func(body map[string]any) (int, string) {
		e, _ := body["error"].(map[string]any)
		code, _ := e["code"].(float64)
		typ, _ := e["type"].(string)
		return int(code), typ
	}

	resp, body := roundTrip("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n")
	if code, typ := model(body); resp.StatusCode != 431 || code != 431 || typ != "BadRequestException" {
		t.Errorf("big headers: %d %v", resp.StatusCode, body)
	}
	resp, body = roundTrip("POST /v1/oauth/tokens HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n" + strings.Repeat("a", 64<<10))
	if code, _ := model(body); resp.StatusCode != 413 || code != 413 {
		t.Errorf("body over the maximum: %d %v", resp.StatusCode, body)
	}
	resp, body = roundTrip("NOT HTTP\r\n\r\n")
	if code, _ := model(body); resp.StatusCode != 400 || code != 400 {
		t.Errorf("not HTTP: %d %v", resp.StatusCode, body)
	}

	// Two open connections from this address; the third is refused with
	// the ErrorModel's 503 and Retry-After.
	// The connections above close on the server's side on its own time:
	// retry until each of the two is admitted (a 200 proves it).
	var open []net.Conn
	deadline := time.Now().Add(10 * time.Second)
	for len(open) < 2 {
		c, err := net.Dial("tcp", admin)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && r.StatusCode == 200 {
			open = append(open, c)
			continue
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no connection admitted: %v %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, body = roundTrip("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, typ := model(body); resp.StatusCode != 503 || code != 503 || typ != "ServiceUnavailableException" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third connection: %d %v %v", resp.StatusCode, resp.Header, body)
	}
	// Closing one lets a new one in.
	open[0].Close()
	deadline = time.Now().Add(10 * time.Second)
	for {
		resp, _ := http.Get(rs.admin + "/healthz")
		if resp != nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection was not released")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rs.stop()
	if out := rs.stdout.String(); !strings.Contains(out, `"msg":"catalog: connection refused"`) || !strings.Contains(out, `"msg":"catalog: unreadable request refused"`) {
		t.Errorf("refusals not logged:\n%s", out)
	}
}
