package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
	"github.com/duckicelake/duckicelake/sigv4"
)

// rawRequest is a request written byte by byte over a connection, signed
// the way an SDK would, so tests can send what no SDK sends.
type rawRequest struct {
	method, path, query string
	header              []sigv4.Header // extra headers; x-amz-* and content-* are signed
	payload             string         // x-amz-content-sha256
	wire                []byte         // the body as sent
	contentLength       int64          // -1: none
	unsignedToken       bool           // send the session token without signing it
}

// sign returns the header block of r signed with m at t, and the seed
// signature.
func (r *rawRequest) sign(host string, m creds.Minted, t time.Time) (string, [32]byte) {
	signer := &sigv4.Signer{AccessKeyID: m.AccessKeyID, SecretAccessKey: m.SecretAccessKey,
		Region: "us-east-1", Service: "s3"}
	date := string(sigv4.AppendAmzDate(nil, t))
	signed := []sigv4.Header{
		{Name: []byte("host"), Value: []byte(host)},
		{Name: []byte("x-amz-date"), Value: []byte(date)},
		{Name: []byte("x-amz-content-sha256"), Value: []byte(r.payload)},
	}
	if m.SessionToken != "" && !r.unsignedToken {
		signed = append(signed, sigv4.Header{Name: []byte("x-amz-security-token"), Value: []byte(m.SessionToken)})
	}
	var extra []sigv4.Header
	for _, h := range r.header {
		n := strings.ToLower(string(h.Name))
		if strings.HasPrefix(n, "x-amz-") || strings.HasPrefix(n, "content-") && n != "content-length" {
			signed = append(signed, h)
		} else {
			extra = append(extra, h)
		}
	}
	auth, seed := signer.AppendAuthorization(nil, &sigv4.SignRequest{
		Method: []byte(r.method), RawPath: []byte(r.path), RawQuery: []byte(r.query),
		Headers: signed, PayloadHash: []byte(r.payload)}, t)
	var b strings.Builder
	target := r.path
	if r.query != "" {
		target += "?" + r.query
	}
	b.WriteString(r.method + " " + target + " HTTP/1.1\r\n")
	b.WriteString("Authorization: " + string(auth) + "\r\n")
	for _, h := range signed {
		b.WriteString(string(h.Name) + ": " + string(h.Value) + "\r\n")
	}
	if r.unsignedToken {
		b.WriteString("x-amz-security-token: " + m.SessionToken + "\r\n")
	}
	for _, h := range extra {
		b.WriteString(string(h.Name) + ": " + string(h.Value) + "\r\n")
	}
	if r.contentLength >= 0 {
		b.WriteString("Content-Length: " + strconv.FormatInt(r.contentLength, 10) + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String(), seed
}

// send writes the request (headers, then wire) to the gateway and reads
// the response; see sendTo.
func (e *env) send(t *testing.T, head string, wire []byte, truncate int) (*http.Response, string) {
	t.Helper()
	return sendTo(t, strings.TrimPrefix(e.endpoint, "http://"), head, wire, truncate, false)
}

// sendTo writes a request (head, then wire) to addr on a connection of its
// own and reads the response; isHead says it answers a HEAD (no body). With
// truncate >= 0, only that many wire bytes are sent before the write side is
// closed, and the response may be missing (nil). A failed write of the body
// is no failure: the gateway may answer and close before it has read the
// body, as S3 does.
func sendTo(t *testing.T, addr, head string, wire []byte, truncate int, isHead bool) (*http.Response, string) {
	t.Helper()
	conn := testsupport.Dial(t, addr, 20*time.Second)
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	if truncate >= 0 {
		wire = wire[:truncate]
	}
	_, _ = conn.Write(wire)
	if truncate >= 0 {
		conn.(*net.TCPConn).CloseWrite()
	}
	var req *http.Request
	if isHead {
		req = &http.Request{Method: "HEAD"}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		// A truncated upload may also just be cut off.
		if truncate >= 0 {
			return nil, ""
		}
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil && truncate < 0 {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(body)
}

// chunkedBody encodes data as aws-chunked for a request signed with m at t.
func chunkedBody(t *testing.T, m creds.Minted, at time.Time, seed [32]byte, signed bool, trailer string, data []byte, chunk int) []byte {
	t.Helper()
	date := sigv4.AppendAmzDate(nil, at)
	scope := string(date[:8]) + "/us-east-1/s3/aws4_request"
	cfg := &sigv4.ChunkedConfig{Signed: signed, AmzDate: date, Scope: []byte(scope), SeedSignature: seed,
		Trailer: []byte(trailer), DecodedLength: int64(len(data))}
	sigv4.DeriveSigningKey(&cfg.SigningKey, []byte(m.SecretAccessKey), date[:8], []byte("us-east-1"), []byte("s3"))
	wire, err := io.ReadAll(sigv4.NewChunkedEncoder(bytes.NewReader(data), cfg, chunk))
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// TestStreamingUploadIntegrity: a PUT whose body does not verify or does not
// arrive whole neither creates nor overwrites the object on the backend.
//
// Bodies up to maxSmallUpload go upstream whole with their SHA-256, larger
// ones as aws-chunked: both sizes run every case, and the large ones in both
// upstream modes, unsigned chunks with a trailing checksum (the default on
// this loopback upstream) and signed chunks (SignAllChunks).
func TestStreamingUploadIntegrity(t *testing.T) {
	for _, mode := range []struct {
		name          string
		signAllChunks bool
	}{{"trailer", false}, {"signed", true}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config, _ *Deps) { c.Upstream.SignAllChunks = mode.signAllChunks })
			b := e.bucket()
			m := e.mint(time.Hour, b+":data/:rw")
			host := strings.TrimPrefix(e.endpoint, "http://")
			for _, size := range []struct {
				name        string
				data, chunk int
			}{
				{"large", 300 << 10, 64 << 10},
				{"small", 40 << 10, 8 << 10},
			} {
				if size.name == "small" && mode.signAllChunks {
					continue // sent whole either way
				}
				t.Run(size.name, func(t *testing.T) {
					data := make([]byte, size.data)
					rand.Read(data)
					testUploadIntegrity(t, e, b, m, host, data, size.chunk)
				})
			}
		})
	}
}

// TestUploadChecksum: a streamed PutObject without a checksum of its own
// reaches the backend with a CRC32C the backend verified and stored (none
// with SignAllChunks); a client's own checksum header is kept, not joined by
// another.
func TestUploadChecksum(t *testing.T) {
	data := make([]byte, 200<<10)
	rand.Read(data)
	crc := func(d []byte) string {
		v := crc32.Checksum(d, crc32.MakeTable(crc32.Castagnoli))
		return base64.StdEncoding.EncodeToString([]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	sha := sha256.Sum256(data)
	shaB64 := base64.StdEncoding.EncodeToString(sha[:])
	for _, signAll := range []bool{false, true} {
		e := newEnv(t, func(c *Config, _ *Deps) { c.Upstream.SignAllChunks = signAll })
		b := e.bucket()
		m := e.mint(time.Hour, b+":data/:rw")
		host := strings.TrimPrefix(e.endpoint, "http://")
		put := func(key string, header ...sigv4.Header) {
			t.Helper()
			r := &rawRequest{method: "PUT", path: "/" + b + "/" + key, payload: sigv4.UnsignedPayload,
				contentLength: int64(len(data)), header: header}
			head, _ := r.sign(host, m, time.Now())
			if resp, body := e.send(t, head, data, -1); resp == nil || resp.StatusCode != 200 {
				t.Fatalf("SignAllChunks %v, put %s: %v %s", signAll, key, resp, body)
			}
			if got, _ := e.getDirect(b, key); got != string(data) {
				t.Fatalf("SignAllChunks %v, %s: backend holds %d bytes", signAll, key, len(got))
			}
		}
		put("data/plain")
		out, err := e.direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &b, Key: aws.String("data/plain"),
			ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := aws.ToString(out.ChecksumCRC32C), map[bool]string{false: crc(data)}[signAll]; got != want {
			t.Fatalf("SignAllChunks %v: backend CRC32C %q, want %q", signAll, got, want)
		}
		put("data/own", sigv4.Header{Name: []byte("x-amz-checksum-sha256"), Value: []byte(shaB64)})
		out, err = e.direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &b, Key: aws.String("data/own"),
			ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.ChecksumSHA256) != shaB64 || out.ChecksumCRC32C != nil {
			t.Fatalf("SignAllChunks %v: client's checksum: sha256 %q crc32c %q", signAll,
				aws.ToString(out.ChecksumSHA256), aws.ToString(out.ChecksumCRC32C))
		}
	}
}

func testUploadIntegrity(t *testing.T, e *env, b string, m creds.Minted, host string, data []byte, chunk int) {

	type tamper func(wire []byte) []byte
	flipSig := func(n int) tamper { // the n-th "chunk-signature=" value
		return func(w []byte) []byte {
			w = bytes.Clone(w)
			i := 0
			for range n + 1 {
				j := bytes.Index(w[i:], []byte("chunk-signature="))
				i += j + len("chunk-signature=")
			}
			w[i] ^= 1
			return w
		}
	}
	flipData := func(w []byte) []byte {
		w = bytes.Clone(w)
		i := bytes.Index(w, []byte("\r\n")) + 2 + 100
		w[i] ^= 0x55
		return w
	}
	flipTrailerSig := func(w []byte) []byte {
		w = bytes.Clone(w)
		i := bytes.Index(w, []byte("x-amz-trailer-signature:")) + len("x-amz-trailer-signature:")
		w[i+3] ^= 1
		return w
	}
	crc := func(d []byte) string {
		var s [4]byte
		v := crc32.ChecksumIEEE(d)
		s[0], s[1], s[2], s[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		return base64.StdEncoding.EncodeToString(s[:])
	}

	cases := []struct {
		name     string
		payload  string
		trailer  string
		signed   bool
		tamper   tamper
		truncate int // wire bytes sent before the write side closes; -1 all, -2 all but the final chunk, -3 two thirds
		wantCode string
	}{
		{name: "valid signed", payload: sigv4.StreamingPayload, signed: true, truncate: -1},
		{name: "valid signed trailer", payload: sigv4.StreamingPayloadTrailer, signed: true, trailer: "x-amz-checksum-crc32", truncate: -1},
		{name: "valid unsigned trailer", payload: sigv4.StreamingUnsignedTrailer, trailer: "x-amz-checksum-crc32", truncate: -1},
		{name: "valid unsigned payload", payload: sigv4.UnsignedPayload, truncate: -1},
		{name: "first chunk signature", payload: sigv4.StreamingPayload, signed: true, tamper: flipSig(0), truncate: -1, wantCode: "SignatureDoesNotMatch"},
		{name: "middle chunk signature", payload: sigv4.StreamingPayload, signed: true, tamper: flipSig(2), truncate: -1, wantCode: "SignatureDoesNotMatch"},
		{name: "final chunk signature", payload: sigv4.StreamingPayload, signed: true, tamper: flipSig(5), truncate: -1, wantCode: "SignatureDoesNotMatch"},
		{name: "chunk data", payload: sigv4.StreamingPayload, signed: true, tamper: flipData, truncate: -1, wantCode: "SignatureDoesNotMatch"},
		{name: "trailer signature", payload: sigv4.StreamingPayloadTrailer, signed: true, trailer: "x-amz-checksum-crc32", tamper: flipTrailerSig, truncate: -1, wantCode: "SignatureDoesNotMatch"},
		{name: "unsigned trailer checksum", payload: sigv4.StreamingUnsignedTrailer, trailer: "x-amz-checksum-crc32", tamper: flipData, truncate: -1, wantCode: "BadDigest"},
		{name: "truncated signed", payload: sigv4.StreamingPayload, signed: true, truncate: -3},
		{name: "truncated before final chunk", payload: sigv4.StreamingPayload, signed: true, truncate: -2},
		{name: "truncated unsigned payload", payload: sigv4.UnsignedPayload, truncate: -3},
		{name: "truncated sha256 payload", payload: "sha256", truncate: -3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, existing := range []bool{false, true} {
				key := "data/" + strings.ReplaceAll(tc.name, " ", "-") + "-" + strconv.FormatBool(existing)
				if existing {
					e.putDirect(b, key, "old content")
				}
				now := time.Now()
				r := &rawRequest{method: "PUT", path: "/" + b + "/" + key, payload: tc.payload}
				streaming := strings.HasPrefix(tc.payload, "STREAMING-")
				if tc.payload == "sha256" {
					r.payload = sigv4HexSHA256(data)
				}
				if streaming {
					r.header = append(r.header,
						sigv4.Header{Name: []byte("content-encoding"), Value: []byte("aws-chunked")},
						sigv4.Header{Name: []byte("x-amz-decoded-content-length"), Value: []byte(strconv.Itoa(len(data)))})
					if tc.trailer != "" {
						r.header = append(r.header, sigv4.Header{Name: []byte("x-amz-trailer"), Value: []byte(tc.trailer)})
					}
				}
				var wire []byte
				if !streaming {
					wire = data
					r.contentLength = int64(len(data))
				} else {
					// The wire length does not depend on the signature.
					r.contentLength = sigv4.EncodedLength(int64(len(data)), chunk,
						&sigv4.ChunkedConfig{Signed: tc.signed, Trailer: []byte(tc.trailer)})
				}
				head, seed := r.sign(host, m, now)
				if streaming {
					wire = chunkedBody(t, m, now, seed, tc.signed, tc.trailer, data, chunk)
					if int64(len(wire)) != r.contentLength {
						t.Fatalf("encoded %d bytes, EncodedLength %d", len(wire), r.contentLength)
					}
				}
				if tc.tamper != nil {
					wire = tc.tamper(wire)
				}
				truncate := tc.truncate
				switch truncate {
				case -2:
					// Everything but the final chunk and the closing CRLF.
					truncate = bytes.LastIndex(wire, []byte("0;chunk-signature="))
				case -3:
					truncate = len(wire) * 2 / 3
				}
				resp, body := e.send(t, head, wire, truncate)
				valid := tc.tamper == nil && tc.truncate == -1
				if valid {
					if resp == nil || resp.StatusCode != 200 {
						t.Fatalf("valid upload: %v %s", resp, body)
					}
					if got, _ := e.getDirect(b, key); got != string(data) {
						t.Fatalf("backend holds %d bytes, want %d", len(got), len(data))
					}
					if tc.trailer != "" {
						// The checksum travelled on to the backend.
						h := headDirectChecksum(t, e, b, key)
						if h != crc(data) {
							t.Fatalf("backend CRC32 %q, want %q", h, crc(data))
						}
					}
					continue
				}
				if resp != nil && resp.StatusCode == 200 {
					t.Fatalf("bad upload answered 200: %s", body)
				}
				if tc.wantCode != "" && (resp == nil || !strings.Contains(body, "<Code>"+tc.wantCode+"</Code>")) {
					t.Fatalf("response %v %s, want %s", resp, body, tc.wantCode)
				}
				// Give the backend a moment to finish whatever it does
				// with the aborted request.
				time.Sleep(50 * time.Millisecond)
				got, ok := e.getDirect(b, key)
				switch {
				case existing && got != "old content":
					t.Fatalf("existing object overwritten: %d bytes", len(got))
				case !existing && ok:
					t.Fatalf("object created with %d bytes", len(got))
				}
			}
		})
	}
}

func sigv4HexSHA256(b []byte) string {
	var h [64]byte
	return string(appendHexSHA256(&h, b))
}

// headDirectChecksum returns the CRC32 the backend stored for an object.
func headDirectChecksum(t *testing.T, e *env, bucket, key string) string {
	t.Helper()
	out, err := e.direct.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key,
		ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ChecksumCRC32)
}
