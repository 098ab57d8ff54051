package gateway

import (
	"bufio"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func parseHeader(t *testing.T, raw string) *fasthttp.RequestHeader {
	t.Helper()
	var h fasthttp.RequestHeader
	h.DisableNormalizing()
	if err := h.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		t.Fatal(err)
	}
	return &h
}

func TestHeaderIndex(t *testing.T) {
	h := parseHeader(t, "GET /b/k HTTP/1.1\r\nHost: Example.COM:9000\r\nX-Amz-Meta-A: 1\r\nx-amz-meta-a: 2\r\n"+
		"Content-Type: text/plain\r\nAUTHORIZATION: sig\r\nX-Forwarded-Host: lake.s3.test, proxy\r\n\r\n")
	var ix headerIndex
	ix.reset(h, false)
	if got := ix.AppendValues(nil, []byte("x-amz-meta-a")); len(got) != 2 || string(got[0]) != "1" || string(got[1]) != "2" {
		t.Fatalf("x-amz-meta-a = %q", got)
	}
	if string(ix.get("host")) != "Example.COM:9000" || string(ix.get("content-type")) != "text/plain" {
		t.Fatalf("host %q content-type %q", ix.get("host"), ix.get("content-type"))
	}
	if ix.count("authorization") != 1 || ix.get("missing") != nil {
		t.Fatal("count or get wrong")
	}
	ix.reset(h, true)
	if string(ix.get("host")) != "lake.s3.test" {
		t.Fatalf("trusted forwarded host %q", ix.get("host"))
	}
	if n := testing.AllocsPerRun(100, func() { ix.reset(h, false) }); n != 0 {
		t.Fatalf("%v allocations per reset", n)
	}
}
