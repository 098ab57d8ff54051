package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// This file builds requests byte by byte, for the adversarial tests: the
// request target exactly as sent, headers in order (duplicates allowed),
// bodies cut short, and aws-chunked bodies with chosen signatures. Signing
// uses aws-sdk-go-v2's signer (an implementation independent of ours); the
// chunk signatures are computed here from the AWS documentation and checked
// against its examples in TestChunkSignerVectors.

// wireReq is one HTTP/1.1 request as it goes on the wire.
type wireReq struct {
	Method string
	Target string      // request target exactly as sent: /bucket/key?query
	Host   string      // Host header; empty means the address dialled
	Header [][2]string // sent in this order after Host
	Body   []byte
	// Send is how many bytes of Body to send before closing the write side;
	// negative sends all of it. Content-Length still announces len(Body)
	// unless Header sets it.
	Send int
}

// wireResp is what came back; Status 0 means the connection closed without
// a response.
type wireResp struct {
	Status int
	Header http.Header
	Body   []byte
}

// code is the S3 error code of an XML error body, "" if none.
func (r wireResp) code() string {
	s := string(r.Body)
	i := strings.Index(s, "<Code>")
	j := strings.Index(s, "</Code>")
	if i < 0 || j < i {
		return ""
	}
	return s[i+len("<Code>") : j]
}

func (r wireResp) String() string {
	if r.Status == 0 {
		return "connection closed without a response"
	}
	return fmt.Sprintf("%d %s", r.Status, r.Body)
}

// sign adds X-Amz-Date, X-Amz-Content-Sha256, X-Amz-Security-Token and
// Authorization to w, signing every header w has (and content-length) with
// c at time at. payloadHash is the x-amz-content-sha256 value; "" means the
// hex SHA-256 of the body. It returns the signature, the seed of a chunked body.
func (a *adv) sign(t testing.TB, c creds, w *wireReq, payloadHash string, at time.Time) string {
	t.Helper()
	if w.Host == "" {
		w.Host = a.addr
	}
	if payloadHash == "" {
		sum := sha256.Sum256(w.Body)
		payloadHash = hex.EncodeToString(sum[:])
	}
	path, query, _ := strings.Cut(w.Target, "?")
	req := &http.Request{
		Method: w.Method,
		URL:    &url.URL{Scheme: "http", Host: w.Host, Opaque: path, RawQuery: query},
		Host:   w.Host,
		Header: http.Header{},
	}
	req.ContentLength = int64(len(w.Body))
	for _, h := range w.Header {
		if strings.EqualFold(h[0], "Content-Length") {
			n, _ := strconv.ParseInt(h[1], 10, 64)
			req.ContentLength = n
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	err := signer.SignHTTP(context.Background(), aws.Credentials{
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken,
	}, req, payloadHash, "s3", a.e.Region, at)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"X-Amz-Date", "X-Amz-Content-Sha256", "X-Amz-Security-Token", "Authorization"} {
		if v := req.Header.Get(name); v != "" {
			w.Header = append(w.Header, [2]string{name, v})
		}
	}
	auth := req.Header.Get("Authorization")
	return auth[strings.LastIndex(auth, "Signature=")+len("Signature="):]
}

// send writes w to addr and reads the response.
func send(t testing.TB, addr string, w *wireReq) wireResp {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	host := w.Host
	if host == "" {
		host = addr
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", w.Method, w.Target, host)
	hasLength := false
	for _, h := range w.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
		if strings.EqualFold(h[0], "Content-Length") || strings.EqualFold(h[0], "Transfer-Encoding") {
			hasLength = true
		}
	}
	if !hasLength && (len(w.Body) > 0 || w.Method == http.MethodPut || w.Method == http.MethodPost) {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(w.Body))
	}
	b.WriteString("\r\n")
	body := w.Body
	if w.Send >= 0 && w.Send < len(body) {
		body = body[:w.Send]
	}
	b.Write(body)
	if _, err := conn.Write(b.Bytes()); err != nil {
		return wireResp{}
	}
	if w.Send >= 0 && w.Send < len(w.Body) {
		// The client "dies" mid-body: no more bytes will come.
		conn.(*net.TCPConn).CloseWrite()
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: w.Method})
	if err != nil {
		return wireResp{}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return wireResp{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// chunkSigner computes aws-chunked chunk and trailer signatures.
type chunkSigner struct {
	key   [32]byte // the SigV4 signing key
	date  string   // x-amz-date
	scope string   // yyyymmdd/region/s3/aws4_request
	prev  string   // the previous signature: the seed, then each chunk's
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

func newChunkSigner(secret, amzDate, region, seed string) *chunkSigner {
	day := amzDate[:8]
	k := hmacSHA256([]byte("AWS4"+secret), []byte(day))
	k = hmacSHA256(k, []byte(region))
	k = hmacSHA256(k, []byte("s3"))
	k = hmacSHA256(k, []byte("aws4_request"))
	s := &chunkSigner{date: amzDate, scope: day + "/" + region + "/s3/aws4_request", prev: seed}
	copy(s.key[:], k)
	return s
}

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// next returns the signature of a chunk holding data.
func (s *chunkSigner) next(data []byte) string {
	sum := sha256.Sum256(data)
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + s.date + "\n" + s.scope + "\n" + s.prev + "\n" + emptySHA256 + "\n" + hex.EncodeToString(sum[:])
	s.prev = hex.EncodeToString(hmacSHA256(s.key[:], []byte(sts)))
	return s.prev
}

// trailer returns the signature of the trailing header lines (each "name:value\n").
func (s *chunkSigner) trailer(lines string) string {
	sum := sha256.Sum256([]byte(lines))
	sts := "AWS4-HMAC-SHA256-TRAILER\n" + s.date + "\n" + s.scope + "\n" + s.prev + "\n" + hex.EncodeToString(sum[:])
	s.prev = hex.EncodeToString(hmacSHA256(s.key[:], []byte(sts)))
	return s.prev
}

// chunkedBody builds a signed aws-chunked body of chunks; corrupt(i, sig)
// may replace the signature of chunk i (len(chunks) is the final, empty
// chunk). trailer, if not empty, is "name:value" and is signed as a trailer;
// corruptTrailer replaces its signature.
func chunkedBody(s *chunkSigner, chunks [][]byte, corrupt func(i int, sig string) string, trailer string, corruptTrailer func(string) string) []byte {
	var b bytes.Buffer
	for i, c := range append(chunks, nil) {
		sig := s.next(c)
		if corrupt != nil {
			sig = corrupt(i, sig)
		}
		fmt.Fprintf(&b, "%x;chunk-signature=%s\r\n", len(c), sig)
		if len(c) > 0 {
			b.Write(c)
			b.WriteString("\r\n")
		}
	}
	if trailer == "" {
		b.WriteString("\r\n")
		return b.Bytes()
	}
	sig := s.trailer(trailer + "\n")
	if corruptTrailer != nil {
		sig = corruptTrailer(sig)
	}
	fmt.Fprintf(&b, "%s\r\nx-amz-trailer-signature:%s\r\n\r\n", trailer, sig)
	return b.Bytes()
}

// unsignedChunkedBody builds a STREAMING-UNSIGNED-PAYLOAD-TRAILER body.
func unsignedChunkedBody(chunks [][]byte, trailer string) []byte {
	var b bytes.Buffer
	for _, c := range chunks {
		fmt.Fprintf(&b, "%x\r\n", len(c))
		b.Write(c)
		b.WriteString("\r\n")
	}
	fmt.Fprintf(&b, "0\r\n%s\r\n\r\n", trailer)
	return b.Bytes()
}

// TestChunkSignerVectors checks the chunk signer against the examples of
// the AWS documentation (shared/specs/sigv4/streaming-vectors.md), so the
// adversarial tests' "wrong" signatures differ from right ones only where
// they mean to.
func TestChunkSignerVectors(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	payload := bytes.Repeat([]byte{'a'}, 66560)
	chunks := [][]byte{payload[:65536], payload[65536:], nil}

	var s *chunkSigner
	for _, v := range []struct {
		name, seed string
		want       []string
	}{
		{"chunk", "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", []string{
			"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
			"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
			"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
		}},
		// The trailer variant; s stays its signer for the trailer below.
		{"trailer variant chunk", "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e", []string{
			"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
			"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
			"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
		}},
	} {
		s = newChunkSigner(secret, "20130524T000000Z", "us-east-1", v.seed)
		for i, c := range chunks {
			if got := s.next(c); got != v.want[i] {
				t.Errorf("%s %d: signature %s, want %s", v.name, i, got, v.want[i])
			}
		}
	}
	if got, want := s.trailer("x-amz-checksum-crc32c:sOO8/Q==\n"), "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435"; got != want {
		t.Errorf("trailer signature %s, want %s", got, want)
	}

	// The signed aws-chunked example is 66824 bytes on the wire.
	s = newChunkSigner(secret, "20130524T000000Z", "us-east-1", "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	if n := len(chunkedBody(s, chunks[:2], nil, "", nil)); n != 66824 {
		t.Errorf("chunked body is %d bytes, want 66824", n)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func md5Sum(b []byte) []byte {
	sum := md5.Sum(b)
	return sum[:]
}

// TestWireDirect runs the request builder against the backend itself with
// its root keys: plain and every aws-chunked mode must store the bytes, and
// a corrupted chunk signature must be refused. It proves this file against
// an S3 implementation other than ours.
func TestWireDirect(t *testing.T) {
	e := backendEnv(t)
	u, err := url.Parse(e.S3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	a := &adv{e: e, addr: u.Host}
	prefix := uniquePrefix(t, "wire")
	data := randomBytes(t, 200<<10)

	key := prefix + "plain.bin"
	w := &wireReq{Method: "PUT", Target: a.path(key), Body: data, Send: -1}
	a.sign(t, e.root(), w, "", time.Now().UTC())
	if r := send(t, a.addr, w); r.Status != 200 {
		t.Fatalf("plain PUT: %s", r)
	}
	e.mustBackendEqual(t, key, data)

	for _, mode := range []string{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"} {
		key := prefix + strings.ToLower(mode) + ".bin"
		if r := a.streamingPut(t, e.root(), a.path(key), mode, data, streamOpts{}); r.Status != 200 {
			t.Errorf("%s: %s", mode, r)
			continue
		}
		e.mustBackendEqual(t, key, data)
	}
	key = prefix + "corrupt.bin"
	r := a.streamingPut(t, e.root(), a.path(key), "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", data, streamOpts{
		corrupt: func(i int, s string) string {
			if i == 1 {
				return strings.Repeat("0", len(s))
			}
			return s
		}})
	if r.Status == 200 {
		t.Errorf("the backend took a corrupted chunk signature")
	}
	if _, ok := e.backendGet(t, key); ok {
		t.Errorf("the backend stored an upload with a corrupted chunk signature")
	}
}
