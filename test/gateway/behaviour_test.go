package gateway

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// recorder keeps the response headers and error bodies an SDK's HTTP
// client received.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  [][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	var body []byte
	if resp.StatusCode >= 300 && req.Method != http.MethodHead {
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.headers = append(r.headers, resp.Header.Clone())
	r.bodies = append(r.bodies, body)
	r.mu.Unlock()
	return resp, nil
}

// TestOneRequestID (issue 14 item 7): every response carries one request
// id, and an SDK's error names the id the header and the error document
// carry, through the gateway as direct.
func TestOneRequestID(t *testing.T) {
	e, ts := targets(t, "request-id")
	for _, tg := range ts {
		t.Run(tg.name, func(t *testing.T) {
			rec := &recorder{}
			cl := s3.New(s3.Options{
				BaseEndpoint: aws.String(tg.endpoint), Region: e.Region, UsePathStyle: true,
				Credentials:      e.s3Client(tg.endpoint, tg.creds, 0).Options().Credentials,
				RetryMaxAttempts: 1, HTTPClient: &http.Client{Transport: rec},
			})
			ctx := context.Background()
			key := tg.prefix + "rid.bin"
			if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: &e.Bucket, Key: &key, Body: strings.NewReader("x")}); err != nil {
				t.Fatal(err)
			}
			out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &e.Bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			out.Body.Close()
			if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &e.Bucket, Key: aws.String(tg.prefix + "missing.bin")}); httpStatus(err) != 404 {
				t.Fatalf("HeadObject missing: %v", err)
			}
			_, err = cl.GetObject(ctx, &s3.GetObjectInput{Bucket: &e.Bucket, Key: aws.String(tg.prefix + "missing.bin")})
			var re *awshttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != 404 {
				t.Fatalf("GetObject missing: %v", err)
			}
			for i, h := range rec.headers {
				ids := map[string]bool{}
				for name, vs := range h {
					if strings.EqualFold(name, "x-amz-request-id") {
						for _, v := range vs {
							ids[v] = true
						}
					}
				}
				if len(ids) != 1 {
					t.Errorf("response %d: request ids %v", i, ids)
				}
			}
			last := rec.headers[len(rec.headers)-1].Get("X-Amz-Request-Id")
			var doc struct {
				RequestID string `xml:"RequestId"`
			}
			if err := xml.Unmarshal(rec.bodies[len(rec.bodies)-1], &doc); err != nil {
				t.Fatal(err)
			}
			if re.ServiceRequestID() != last || doc.RequestID != last {
				t.Errorf("the SDK's RequestID %q, the header's %q, the error document's %q", re.ServiceRequestID(), last, doc.RequestID)
			}
		})
	}
}

// TestLargePutRefusedEarly (issue 14 item 8): a large PutObject the backend
// refuses from its headers alone (If-None-Match: * over an existing key, a
// wrong If-Match, a missing bucket) gets the backend's answer with
// aws-sdk-go-v2 (default checksums: aws-chunked with a trailer; and a plain
// signed Content-Length PUT) and minio-go (streaming signed chunks). The
// backend answers before it reads the body and closes; direct, a client may
// see the reset instead (versitygw closes at once), which the gateway, which
// reads the rest of the body before closing, never lets happen.
func TestLargePutRefusedEarly(t *testing.T) {
	e, ts := targets(t, "early")
	missing := "missing-" + strings.TrimSuffix(strings.TrimPrefix(uniquePrefix(t, "b"), "it/b-"), "/")
	for _, tg := range ts {
		c := tg.creds
		if tg.name == "gateway" {
			c = e.mint(t, mintOpts{Principal: "interop-early", TTL: "1h",
				Grants: []string{e.Bucket + ":" + tg.prefix + ":rw", missing + ":data/:rw"}})
		}
		u, err := url.Parse(tg.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := minio.New(u.Host, &minio.Options{Creds: miniocreds.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, c.SessionToken),
			Region: e.Region, BucketLookup: minio.BucketLookupPath, MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		key := tg.prefix + "existing.bin"
		old := []byte("old content")
		e.backendPut(t, key, old)
		for _, size := range []int{1 * mib, 15 * mib} {
			data := randomBytes(t, size)
			cases := []struct {
				name, bucket, key    string
				ifNoneMatch, ifMatch string
				status               int
				code                 string
			}{
				{"if-none-match", e.Bucket, key, "*", "", 412, "PreconditionFailed"},
				{"wrong if-match", e.Bucket, key, "", "0123456789abcdef0123456789abcdef", 412, "PreconditionFailed"},
				{"missing bucket", missing, "data/x.bin", "", "", 404, "NoSuchBucket"},
			}
			for _, tc := range cases {
				check := func(client string, status int, code string, err error) {
					t.Helper()
					switch {
					case status == tc.status && code == tc.code:
					case tg.name == "direct" && status == 0:
						t.Logf("%s %s %d MiB direct: %v (the backend resets the connection)", client, tc.name, size/mib, err)
					default:
						t.Errorf("%s %s %s %d MiB: %d %s (%v), want %d %s", tg.name, client, tc.name, size/mib, status, code, err, tc.status, tc.code)
					}
				}
				for _, mode := range []aws.RequestChecksumCalculation{0, aws.RequestChecksumCalculationWhenRequired} {
					in := &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String(tc.key), Body: bytes.NewReader(data)}
					if tc.ifNoneMatch != "" {
						in.IfNoneMatch = aws.String(tc.ifNoneMatch)
					}
					if tc.ifMatch != "" {
						in.IfMatch = aws.String(`"` + tc.ifMatch + `"`)
					}
					_, err := e.s3Client(tg.endpoint, c, mode).PutObject(context.Background(), in)
					code, status := apiCode(err)
					check("aws-sdk-go-v2 checksums="+map[aws.RequestChecksumCalculation]string{0: "default", aws.RequestChecksumCalculationWhenRequired: "when_required"}[mode], status, code, err)
				}
				var o minio.PutObjectOptions
				if tc.ifNoneMatch != "" {
					o.SetMatchETagExcept(tc.ifNoneMatch)
				}
				if tc.ifMatch != "" {
					o.SetMatchETag(tc.ifMatch)
				}
				_, err := mc.PutObject(context.Background(), tc.bucket, tc.key, bytes.NewReader(data), int64(len(data)), o)
				var me minio.ErrorResponse
				if errors.As(err, &me) {
					check("minio-go", me.StatusCode, me.Code, err)
				} else {
					check("minio-go", 0, "", err)
				}
			}
		}
		e.mustBackendEqual(t, key, old)
	}
}
