package gateway

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/sigv4"
)

// gatewayRID is the shape of the gateway's request ids.
var gatewayRID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// checkOneRequestID fails unless resp carries exactly one request id
// header, the gateway's, and an error body carries the same id.
func checkOneRequestID(t *testing.T, what string, resp *http.Response, body string) string {
	t.Helper()
	// net/http folds header names: every case of the name lands here.
	ids := resp.Header.Values("X-Amz-Request-Id")
	if len(ids) != 1 || !gatewayRID.MatchString(ids[0]) {
		t.Errorf("%s: request id headers %q, want one gateway id", what, ids)
		return ""
	}
	if strings.Contains(body, "<Error>") {
		var doc struct {
			RequestID string `xml:"RequestId"`
		}
		if err := xml.Unmarshal([]byte(body), &doc); err != nil {
			t.Errorf("%s: error body %q: %v", what, body, err)
		} else if doc.RequestID != ids[0] {
			t.Errorf("%s: error body says RequestId %q, header %q", what, doc.RequestID, ids[0])
		}
	}
	return ids[0]
}

// TestOneRequestID: every forwarded response, whatever the op and whether
// it succeeded, carries one request id, the gateway's; an upstream error
// document carries it too; and the audit line keeps the upstream's id for
// every op (versitygw writes its id in two cases, and only one on errors).
func TestOneRequestID(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/a", "hello")
	_, m := e.client(b + ":data/:rw")
	host := strings.TrimPrefix(e.endpoint, "http://")
	empty := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	cases := []struct {
		name, method, path, query string
		body                      string
		status                    int
	}{
		{"GetObject", "GET", "/" + b + "/data/a", "", "", 200},
		{"GetObject missing", "GET", "/" + b + "/data/missing", "", "", 404},
		{"HeadObject", "HEAD", "/" + b + "/data/a", "", "", 200},
		{"HeadObject missing", "HEAD", "/" + b + "/data/missing", "", "", 404},
		{"PutObject", "PUT", "/" + b + "/data/b", "", "x", 200},
		{"PutObject if-none-match", "PUT", "/" + b + "/data/a", "", "x", 412},
		{"ListObjectsV2", "GET", "/" + b, "list-type=2&prefix=data%2F", "", 200},
		{"GetObjectTagging", "GET", "/" + b + "/data/a", "tagging", "", 200},
		{"GetObjectTagging missing", "GET", "/" + b + "/data/missing", "tagging", "", 404},
		{"CreateMultipartUpload", "POST", "/" + b + "/data/mp", "uploads", "", 200},
		{"ListParts bad upload", "GET", "/" + b + "/data/mp", "uploadId=nope", "", 404},
		{"AbortMultipartUpload bad upload", "DELETE", "/" + b + "/data/mp", "uploadId=nope", "", 404},
		{"DeleteObject", "DELETE", "/" + b + "/data/b", "", "", 204},
		{"HeadBucket", "HEAD", "/" + b, "", "", 200},
		{"GetBucketLocation", "GET", "/" + b, "location", "", 200},
	}
	for _, tc := range cases {
		r := &rawRequest{method: tc.method, path: tc.path, query: tc.query, payload: empty, contentLength: -1}
		if tc.method == "PUT" || tc.method == "POST" {
			r.payload = sigv4HexSHA256([]byte(tc.body))
			r.contentLength = int64(len(tc.body))
		}
		if strings.HasSuffix(tc.name, "if-none-match") {
			r.header = []sigv4.Header{{Name: []byte("If-None-Match"), Value: []byte("*")}}
		}
		head, _ := r.sign(host, m, time.Now())
		resp, body := sendTo(t, host, head, []byte(tc.body), -1, tc.method == "HEAD")
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.status, body)
		}
		checkOneRequestID(t, tc.name, resp, body)
	}

	lines := strings.Split(strings.TrimSpace(e.auditLog(len(cases))), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("%d audit lines, want %d", len(lines), len(cases))
	}
	for i, l := range lines {
		var ev struct {
			Op          string `json:"op"`
			Status      int    `json:"status"`
			UpstreamRID string `json:"upstream_rid"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.UpstreamRID == "" || gatewayRID.MatchString(ev.UpstreamRID) {
			t.Errorf("%s (%s %d): upstream_rid %q, want the backend's id", cases[i].name, ev.Op, ev.Status, ev.UpstreamRID)
		}
	}
}

// TestUpstreamRequestIDAnyCase: the upstream's request id, Date and
// hop-by-hop headers go whatever case they come in, and an error document's
// RequestId becomes the gateway's however the document is laid out.
func TestUpstreamRequestIDAnyCase(t *testing.T) {
	u := newRawUpstream(t, func(_ int, req *http.Request, w *bufio.Writer) bool {
		body := ""
		status := "200 OK"
		if strings.HasSuffix(req.URL.Path, "/missing") {
			status = "404 Not Found"
			body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n  <Code>NoSuchKey</Code>\n  <RequestId>UP-1</RequestId>\n  <HostId>h</HostId>\n</Error>\n"
		}
		w.WriteString("HTTP/1.1 " + status + "\r\nX-AMZ-REQUEST-ID: UP-1\r\nx-amz-request-id: UP-1\r\nX-Amz-Request-Id: UP-1\r\n" +
			"DATE: Mon, 01 Jan 2001 00:00:00 GMT\r\nkeep-alive: timeout=5\r\nX-Amz-Id-2: h\r\n" +
			"Content-Type: application/xml\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
		return true
	})
	gw, m := gatewayOver(t, u.addr())
	for _, key := range []string{"present", "missing"} {
		r := &rawRequest{method: "GET", path: "/lake/" + key, payload: sigv4.UnsignedPayload, contentLength: -1}
		head, _ := r.sign(gw, m, time.Now())
		resp, body := sendTo(t, gw, head, nil, -1, false)
		checkOneRequestID(t, key, resp, body)
		if d := resp.Header.Values("Date"); len(d) != 1 || strings.Contains(d[0], "2001") {
			t.Errorf("%s: Date headers %q", key, d)
		}
		if ka := resp.Header.Values("Keep-Alive"); len(ka) != 0 {
			t.Errorf("%s: Keep-Alive %q passed through", key, ka)
		}
		if id2 := resp.Header.Get("X-Amz-Id-2"); id2 != "h" {
			t.Errorf("%s: x-amz-id-2 %q, want the upstream's", key, id2)
		}
		if key == "missing" && (!strings.Contains(body, "<Code>NoSuchKey</Code>\n  <RequestId>"+resp.Header.Get("X-Amz-Request-Id")+"</RequestId>\n  <HostId>h</HostId>") ||
			resp.ContentLength != int64(len(body))) {
			t.Errorf("error body not passed through with our id: %q (length %d)", body, resp.ContentLength)
		}
	}
}
