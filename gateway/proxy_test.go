package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

func TestObjectLifecycleThroughGateway(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		opt  func(*s3.Options)
	}{
		{"default checksums", func(*s3.Options) {}},
		{"when_required", func(o *s3.Options) {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "data/" + strings.ReplaceAll(tc.name, " ", "_") + "/obj one+two.txt"
			body := "hello, gateway " + tc.name
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key,
				Body: strings.NewReader(body), ContentType: aws.String("text/x-test")}, tc.opt)
			if err != nil {
				t.Fatalf("put: %v", err)
			}
			if got, ok := e.getDirect(b, key); !ok || got != body {
				t.Fatalf("backend has %q (exists %v), want %q", got, ok, body)
			}
			out, got := getBody(t, c, &s3.GetObjectInput{Bucket: &b, Key: &key}, tc.opt)
			if got != body || aws.ToString(out.ContentType) != "text/x-test" {
				t.Fatalf("get = %q (%s)", got, aws.ToString(out.ContentType))
			}
			if _, got := getBody(t, c, &s3.GetObjectInput{Bucket: &b, Key: &key, Range: aws.String("bytes=0-4")}, tc.opt); got != "hello" {
				t.Fatalf("range get = %q", got)
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: &key}, tc.opt)
			if err != nil {
				t.Fatalf("head: %v", err)
			}
			if aws.ToInt64(head.ContentLength) != int64(len(body)) {
				t.Fatalf("head content length %d, want %d", aws.ToInt64(head.ContentLength), len(body))
			}
			list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("data/")}, tc.opt)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			found := false
			for _, o := range list.Contents {
				found = found || aws.ToString(o.Key) == key
			}
			if !found {
				t.Fatalf("list misses %q", key)
			}
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: &key}, tc.opt); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, ok := e.getDirect(b, key); ok {
				t.Fatal("object still on the backend after delete")
			}
		})
	}
}

func TestMultipartAndCopyThroughGateway(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	key := "data/big.bin"

	part := make([]byte, 5<<20)
	rand.Read(part)
	last := []byte("tail")
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: &key})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var parts []types.CompletedPart
	for i, p := range [][]byte{part, last} {
		n := int32(i + 1)
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b, Key: &key, UploadId: cr.UploadId,
			PartNumber: &n, Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatalf("upload part %d: %v", n, err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: &n, ETag: up.ETag, ChecksumCRC32: up.ChecksumCRC32})
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: &key, UploadId: cr.UploadId})
	if err != nil || len(lp.Parts) != 2 {
		t.Fatalf("list parts: %v (%d parts)", err, len(lp.Parts))
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b, Key: &key,
		UploadId: cr.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	want := string(part) + string(last)
	if got, ok := e.getDirect(b, key); !ok || got != want {
		t.Fatalf("backend object: %d bytes (exists %v), want %d", len(got), ok, len(want))
	}

	dst := "data/copy.bin"
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: &dst,
		CopySource: aws.String(b + "/" + key)}); err != nil {
		t.Fatalf("copy: %v", err)
	}
	if got, _ := e.getDirect(b, dst); got != want {
		t.Fatalf("copy on the backend: %d bytes, want %d", len(got), len(want))
	}

	// An aborted upload leaves nothing.
	ab, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("data/aborted")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b,
		Key: aws.String("data/aborted"), UploadId: ab.UploadId}); err != nil {
		t.Fatalf("abort: %v", err)
	}
}

// TestKeyEncoding: keys that need percent-encoding reach the backend as the
// same key, and the re-signed request verifies there.
func TestKeyEncoding(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	keys := []string{
		"data/a b", "data/a+b", "data/100%", "data/ü/ñ/日本", "data/x~y", "data/a;b,c", "data/a=b&c",
		"data/(paren)[br]{cu}", "data/q?mark", "data/hash#x", "data/star*", "data/dollar$", "data/at@",
		"data/apos'quote\"", "data/sp ace/ end ",
	}
	for _, key := range keys {
		body := "v:" + key
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Errorf("put %q: %v", key, err)
			continue
		}
		if got, ok := e.getDirect(b, key); !ok || got != body {
			t.Errorf("backend %q: %q (exists %v)", key, got, ok)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String(key)})
		if err != nil {
			t.Errorf("get %q: %v", key, err)
			continue
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(got) != body {
			t.Errorf("get %q = %q", key, got)
		}
		dst := key + ".copy"
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: &dst,
			CopySource: aws.String(b + "/" + url.PathEscape(key))}); err != nil {
			t.Errorf("copy %q: %v", key, err)
		} else if got, _ := e.getDirect(b, dst); got != body {
			t.Errorf("copy of %q holds %q", key, got)
		}
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("data/ü/")})
	if err != nil || len(list.Contents) != 2 || aws.ToString(list.Contents[0].Key) != "data/ü/ñ/日本" {
		t.Fatalf("list under a unicode prefix: %v %v", err, list)
	}
}

// TestConditionalAndErrorsPassThrough: upstream answers other than 200 reach
// the client unchanged (304, 412, 404 with the backend's XML).
func TestConditionalAndErrorsPassThrough(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/c", "conditional")
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("data/c")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/c"), IfNoneMatch: head.ETag})
	if httpStatus(err) != 304 {
		t.Fatalf("If-None-Match: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/c"), IfMatch: aws.String(`"nope"`)})
	if httpStatus(err) != 412 {
		t.Fatalf("If-Match: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/missing")})
	if errorCode(err) != "NoSuchKey" || httpStatus(err) != 404 {
		t.Fatalf("missing key: %v", err)
	}
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b})
	if err != nil {
		t.Fatalf("head bucket: %v", err)
	}
	loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: &b})
	if err != nil {
		t.Fatalf("bucket location: %v %v", err, loc)
	}
}

// TestVirtualHostedUpstream: with PathStyle off the bucket goes into the
// upstream's Host, and the backend (versitygw with --virtual-domain) acts on
// the same object.
func TestVirtualHostedUpstream(t *testing.T) {
	needBackend(t)
	v := testsupport.NewVersitygw(t, testsupport.VersitygwOptions{AccessKey: backendKey, SecretKey: backendSecret,
		Args: []string{"--virtual-domain", "s3.local"}})
	addr := strings.TrimPrefix(v.Endpoint, "http://")
	_, port, _ := net.SplitHostPort(addr)

	e := newEnv(t, func(c *Config, _ *Deps) {
		c.Upstream.Endpoint = "http://s3.local:" + port
		c.Upstream.PathStyle = false
		c.Upstream.dial = func(string) (net.Conn, error) { return net.Dial("tcp", addr) }
	})
	direct := s3test.Client("http://"+addr, "", backendKey, backendSecret, "")
	ctx := context.Background()
	b := "vhost"
	if _, err := direct.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &b}); err != nil {
		t.Fatal(err)
	}
	c, _ := e.client(b + ":data/:rw")
	key := "data/v h/ü+x"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: &key, Body: strings.NewReader("vh")}); err != nil {
		t.Fatalf("put: %v", err)
	}
	if _, got := getBody(t, direct, &s3.GetObjectInput{Bucket: &b, Key: &key}); got != "vh" {
		t.Fatalf("backend holds %q", got)
	}
	// Downloads go through the downloader, which dials the same way.
	if _, got := getBody(t, c, &s3.GetObjectInput{Bucket: &b, Key: &key}); got != "vh" {
		t.Fatalf("gateway get %q", got)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("data/")})
	if err != nil || len(list.Contents) != 1 {
		t.Fatalf("list: %v", err)
	}
}
