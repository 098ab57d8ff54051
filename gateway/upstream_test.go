package gateway

import (
	"bytes"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/internal/creds"
)

func TestAppendWithoutCoding(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"aws-chunked", ""},
		{"AWS-Chunked", ""},
		{"aws-chunked,gzip", "gzip"},
		{"gzip, aws-chunked", "gzip"},
		{" gzip ,br ", "gzip, br"},
		{"", ""},
	} {
		if got := string(appendWithoutCoding(nil, []byte(tc.in), awsChunked)); got != tc.want {
			t.Errorf("appendWithoutCoding(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestForwardAction(t *testing.T) {
	for name, want := range map[string]headerAction{
		"authorization": headerDrop, "x-amz-security-token": headerDrop, "x-amz-date": headerDrop,
		"x-amz-content-sha256": headerDrop, "x-amz-decoded-content-length": headerDrop, "x-amz-trailer": headerDrop,
		"expect": headerDrop, "connection": headerDrop, "transfer-encoding": headerDrop, "content-length": headerDrop,
		"host": headerDrop, "x-forwarded-for": headerDrop, "x-forwarded-host": headerDrop, "forwarded": headerDrop,
		"content-encoding": headerContentEncoding, "x-amz-copy-source": headerCopySource,
		"content-type": headerKeep, "content-md5": headerKeep, "x-amz-checksum-crc32": headerKeep,
		"x-amz-sdk-checksum-algorithm": headerKeep, "range": headerKeep, "if-match": headerKeep,
		"x-amz-meta-owner": headerKeep, "x-amz-copy-source-range": headerKeep, "user-agent": headerKeep,
	} {
		if got := forwardAction([]byte(name)); got != want {
			t.Errorf("forwardAction(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestFilterBucketList(t *testing.T) {
	doc := `<?xml version="1.0" encoding="UTF-8"?>` +
		`<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>o</ID></Owner><Buckets>` +
		`<Bucket><Name>lake</Name><CreationDate>2026-01-01T00:00:00Z</CreationDate></Bucket>` +
		`<Bucket><Name>secret</Name><CreationDate>2026-01-01T00:00:00Z</CreationDate></Bucket>` +
		`<Bucket><Name>lake2</Name><CreationDate>2026-01-01T00:00:00Z</CreationDate></Bucket>` +
		`</Buckets></ListAllMyBucketsResult>`
	c := &creds.Claims{Grants: []creds.Grant{{Bucket: "lake", Prefix: "data/", Access: creds.Read}, {Bucket: "lake2", Access: creds.List}}}
	got := string(filterBucketList(nil, []byte(doc), c))
	if strings.Contains(got, "secret") || !strings.Contains(got, "<Name>lake</Name>") || !strings.Contains(got, "<Name>lake2</Name>") {
		t.Fatalf("filtered: %s", got)
	}
	if !strings.HasSuffix(got, "</Buckets></ListAllMyBucketsResult>") || !strings.Contains(got, "<Owner><ID>o</ID></Owner><Buckets><Bucket>") {
		t.Fatalf("document structure changed: %s", got)
	}
	none := string(filterBucketList(nil, []byte(doc), &creds.Claims{}))
	if strings.Contains(none, "<Bucket>") {
		t.Fatalf("no grants still lists buckets: %s", none)
	}
}

func TestHasRawHeader(t *testing.T) {
	raw := []byte("PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ncontent-LENGTH: 3\r\n\r\n")
	if !hasRawHeader(raw, "content-length") || !hasRawHeader(raw, "transfer-encoding") {
		t.Fatal("missed a header")
	}
	if hasRawHeader(raw, "content-type") || hasRawHeader([]byte("X-Content-Length: 1\r\n"), "content-length") {
		t.Fatal("found a header that is not there")
	}
}

func TestNewUpstreamConfig(t *testing.T) {
	good := UpstreamConfig{Endpoint: "http://127.0.0.1:7070", AccessKeyID: "a", SecretAccessKey: "b"}
	if _, err := newUpstream(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []UpstreamConfig{
		{Endpoint: "", AccessKeyID: "a", SecretAccessKey: "b"},
		{Endpoint: "ftp://x", AccessKeyID: "a", SecretAccessKey: "b"},
		{Endpoint: "http://x/path", AccessKeyID: "a", SecretAccessKey: "b"},
		{Endpoint: "http://u:p@x", AccessKeyID: "a", SecretAccessKey: "b"},
		{Endpoint: "http://x", AccessKeyID: "", SecretAccessKey: "b"},
		{Endpoint: "http://x", AccessKeyID: "a", SecretAccessKey: "b", ChunkSize: 100},
	} {
		if _, err := newUpstream(bad); err == nil {
			t.Errorf("newUpstream(%+v) accepted", bad)
		}
	}
}

func TestRequestIDs(t *testing.T) {
	s := &Server{ridBase: 12345}
	seen := make(map[string]bool)
	var buf [16]byte
	for range 10000 {
		id := s.appendRequestID(buf[:0])
		if len(id) != 16 || bytes.Trim(id, "0123456789abcdef") != nil && len(bytes.Trim(id, "0123456789abcdef")) != 0 {
			t.Fatalf("id %q is not 16 lower-case hex digits", id)
		}
		if seen[string(id)] {
			t.Fatalf("id %q repeated", id)
		}
		seen[string(id)] = true
	}
	if n := testing.AllocsPerRun(100, func() { s.appendRequestID(buf[:0]) }); n != 0 {
		t.Fatalf("%v allocations per id", n)
	}
}
