package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/duckicelake/duckicelake/sigv4"
)

// TestEarlyUpstreamAnswer: a large upload the backend refuses from its
// headers alone (If-None-Match over an existing key, a wrong If-Match, a
// bucket that does not exist) gets the backend's answer, not a 503: the
// backend answers before it reads the body and closes. The existing object
// stays as it was.
func TestEarlyUpstreamAnswer(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	const old = "old content"
	e.putDirect(b, "data/x", old)
	missing := "missing-" + b
	_, m := e.client(b+":data/:rw", missing+":data/:rw")
	sdks := map[string]*s3.Client{
		"default":       e.clientFor(m),
		"when_required": e.clientFor(m, func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired }),
	}
	host := strings.TrimPrefix(e.endpoint, "http://")

	cases := []struct {
		name                 string
		bucket               string
		ifNoneMatch, ifMatch string
		status               int
		code                 string
	}{
		{"if-none-match", b, "*", "", 412, "PreconditionFailed"},
		{"wrong if-match", b, "", `"0123456789abcdef0123456789abcdef"`, 412, "PreconditionFailed"},
		{"missing bucket", missing, "", "", 404, "NoSuchBucket"},
	}
	for _, size := range []int{1 << 20, 16 << 20} {
		data := make([]byte, size)
		rand.Read(data)
		for _, tc := range cases {
			name := tc.name + "/" + strconv.Itoa(size>>20) + "MiB"
			// aws-sdk-go-v2 with its default checksums (aws-chunked with a
			// CRC32 trailer) and a plain Content-Length PUT; several times,
			// as the SDK reuses connections: one the gateway closes must
			// have said so.
			for mode, sdk := range sdks {
				for range 3 {
					in := &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String("data/x"), Body: bytes.NewReader(data)}
					if tc.ifNoneMatch != "" {
						in.IfNoneMatch = aws.String(tc.ifNoneMatch)
					}
					if tc.ifMatch != "" {
						in.IfMatch = aws.String(tc.ifMatch)
					}
					_, err := sdk.PutObject(context.Background(), in)
					if httpStatus(err) != tc.status || errorCode(err) != tc.code {
						t.Errorf("%s, aws-sdk-go-v2 %s: %d %v, want %d %s", name, mode, httpStatus(err), err, tc.status, tc.code)
					}
				}
			}

			// A plain signed Content-Length PUT.
			for _, payload := range []string{sigv4.UnsignedPayload, sigv4HexSHA256(data)} {
				r := &rawRequest{method: "PUT", path: "/" + tc.bucket + "/data/x", payload: payload, contentLength: int64(size)}
				if tc.ifNoneMatch != "" {
					r.header = append(r.header, sigv4.Header{Name: []byte("If-None-Match"), Value: []byte(tc.ifNoneMatch)})
				}
				if tc.ifMatch != "" {
					r.header = append(r.header, sigv4.Header{Name: []byte("If-Match"), Value: []byte(tc.ifMatch)})
				}
				head, _ := r.sign(host, m, time.Now())
				resp, body := sendTo(t, host, head, data, -1, false)
				if resp.StatusCode != tc.status || !strings.Contains(body, "<Code>"+tc.code+"</Code>") {
					t.Errorf("%s, Content-Length PUT (%.16s): %d %s", name, payload, resp.StatusCode, body)
				}
				checkOneRequestID(t, name, resp, body)
			}
		}
		if got, _ := e.getDirect(b, "data/x"); got != old {
			t.Fatalf("the existing object changed: %d bytes", len(got))
		}
	}
}

// TestEarlyAnswerRelayedOnlyWhenAnError: an upstream that answers an upload
// early is relayed when it refuses; one that claims success before it has
// the body is not believed (503), nor is a connection it closes without an
// answer.
func TestEarlyAnswerRelayedOnlyWhenAnError(t *testing.T) {
	u := newRawUpstream(t, func(_ int, req *http.Request, w *bufio.Writer) bool {
		switch req.URL.Path {
		case "/lake/refused":
			body := "<Error><Code>PreconditionFailed</Code><RequestId>UP</RequestId></Error>"
			w.WriteString("HTTP/1.1 412 Precondition Failed\r\nContent-Type: application/xml\r\nConnection: close\r\nContent-Length: " +
				strconv.Itoa(len(body)) + "\r\n\r\n" + body)
		case "/lake/ok":
			w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
		}
		return false // close with the body unread
	})
	gw, m := gatewayOver(t, u.addr())
	data := make([]byte, 8<<20)
	for _, tc := range []struct {
		key    string
		status int
		code   string
	}{
		{"refused", 412, "PreconditionFailed"},
		{"ok", 503, "ServiceUnavailable"},
		{"silent", 503, "ServiceUnavailable"},
	} {
		r := &rawRequest{method: "PUT", path: "/lake/" + tc.key, payload: sigv4.UnsignedPayload, contentLength: int64(len(data))}
		head, _ := r.sign(gw, m, time.Now())
		resp, body := sendTo(t, gw, head, data, -1, false)
		if resp.StatusCode != tc.status || !strings.Contains(body, "<Code>"+tc.code+"</Code>") {
			t.Errorf("%s: %d %s, want %d %s", tc.key, resp.StatusCode, body, tc.status, tc.code)
		}
		checkOneRequestID(t, tc.key, resp, body)
		if tc.key == "refused" && !resp.Close {
			t.Errorf("the relayed early answer does not say Connection: close")
		}
	}
}
