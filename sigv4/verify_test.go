package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

var testNow = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

const (
	testAKID   = "AKIDUCKICELAKE"
	testSecret = "s3cr3t/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testToken  = "tok/en+with=chars"
)

func testSigner(token string) *Signer {
	return &Signer{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token, Region: "us-east-1", Service: "s3"}
}

func testVerifier() *Verifier {
	v := NewVerifier("us-east-1", "s3")
	v.Now = func() time.Time { return testNow }
	return v
}

func testStore(token string) staticStore { return staticStore{testAKID, testSecret, token} }

// s3Request describes a request before signing; sign adds host, x-amz-date,
// x-amz-content-sha256 and the token the way an SDK does.
type s3Request struct {
	method, path, query string
	headers             headerList // extra headers, lower-case names
	payload             string     // x-amz-content-sha256; "" = UNSIGNED-PAYLOAD
	at                  time.Time
}

func (q s3Request) sign(s *Signer) *Request {
	at := q.at
	if at.IsZero() {
		at = testNow
	}
	payload := q.payload
	if payload == "" {
		payload = UnsignedPayload
	}
	hs := headerList{
		{Name: []byte("host"), Value: []byte("127.0.0.1:9000")},
		{Name: []byte("x-amz-date"), Value: AppendAmzDate(nil, at)},
		{Name: []byte("x-amz-content-sha256"), Value: []byte(payload)},
	}
	if s.SessionToken != "" {
		hs = append(hs, Header{Name: []byte("x-amz-security-token"), Value: []byte(s.SessionToken)})
	}
	hs = append(hs, q.headers...)
	auth, _ := s.AppendAuthorization(nil, &SignRequest{
		Method: []byte(q.method), RawPath: []byte(q.path), RawQuery: []byte(q.query),
		Headers: hs, PayloadHash: []byte(payload),
	}, at)
	hs = append(hs, Header{Name: []byte("authorization"), Value: auth})
	return &Request{Method: []byte(q.method), RawPath: []byte(q.path), RawQuery: []byte(q.query), Header: hs}
}

// with returns a copy of r's headers changed by f.
func with(r *Request, f func(h headerList) headerList) *Request {
	c := *r
	h := append(headerList(nil), r.Header.(headerList)...)
	c.Header = f(h)
	return &c
}

func set(name, value string) func(headerList) headerList {
	return func(h headerList) headerList {
		for i := range h {
			if string(h[i].Name) == name {
				h[i].Value = []byte(value)
				return h
			}
		}
		return append(h, Header{Name: []byte(name), Value: []byte(value)})
	}
}

func del(name string) func(headerList) headerList {
	return func(h headerList) headerList {
		out := h[:0]
		for _, x := range h {
			if string(x.Name) != name {
				out = append(out, x)
			}
		}
		return out
	}
}

func add(name, value string) func(headerList) headerList {
	return func(h headerList) headerList { return append(h, Header{Name: []byte(name), Value: []byte(value)}) }
}

func getHeader(r *Request, name string) string {
	vs := r.Header.AppendValues(nil, []byte(name))
	if len(vs) == 0 {
		return ""
	}
	return string(vs[0])
}

func wantCode(t *testing.T, err error, want ErrorCode) {
	t.Helper()
	if want == 0 {
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("verified, want %v", want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("untyped error %v", err)
	}
	if e.Code != want {
		t.Fatalf("got %v, want %v", err, want)
	}
}

func TestVerifyHeaderS3(t *testing.T) {
	base := s3Request{method: "GET", path: "/bucket/key", query: "versionId=3"}
	good := base.sign(testSigner(testToken))
	auth := getHeader(good, "authorization")
	tests := []struct {
		name  string
		req   *Request
		store CredentialStore
		want  ErrorCode
	}{
		{"good", good, nil, 0},
		{"no auth", with(good, del("authorization")), nil, ErrAccessDenied},
		{"two auth headers", with(good, add("authorization", auth)), nil, ErrAuthorizationHeaderMalformed},
		{"header and query auth", &Request{Method: good.Method, RawPath: good.RawPath,
			RawQuery: []byte("versionId=3&X-Amz-Algorithm=AWS4-HMAC-SHA256"), Header: good.Header}, nil, ErrInvalidArgument},
		{"sigv2 query", &Request{Method: good.Method, RawPath: good.RawPath,
			RawQuery: []byte("AWSAccessKeyId=AKID&Expires=1&Signature=abc"), Header: with(good, del("authorization")).Header}, nil, ErrInvalidRequest},
		{"sigv2 header", with(good, set("authorization", "AWS AKID:c2lnbmF0dXJl")), nil, ErrInvalidRequest},
		{"sigv4a header", with(good, set("authorization", strings.Replace(auth, Algorithm, AlgorithmECDSA, 1))), nil, ErrNotImplemented},
		{"no date", with(good, del("x-amz-date")), nil, ErrAccessDenied},
		{"two dates", with(good, add("x-amz-date", string(AppendAmzDate(nil, testNow)))), nil, ErrAccessDenied},
		{"bad date", with(good, set("x-amz-date", "20260501T100060Z")), nil, ErrAccessDenied},
		{"date changed", with(good, set("x-amz-date", "20260501T100001Z")), nil, ErrSignatureDoesNotMatch},
		{"date other day", with(good, set("x-amz-date", "20260502T100000Z")), nil, ErrAuthorizationHeaderMalformed},
		{"region", with(good, set("authorization", strings.Replace(auth, "/us-east-1/", "/eu-west-1/", 1))), nil, ErrAuthorizationHeaderMalformed},
		{"service", with(good, set("authorization", strings.Replace(auth, "/s3/", "/s4/", 1))), nil, ErrAuthorizationHeaderMalformed},
		{"no content sha", with(good, del("x-amz-content-sha256")), nil, ErrInvalidRequest},
		{"two content sha", with(good, add("x-amz-content-sha256", UnsignedPayload)), nil, ErrInvalidArgument},
		{"content sha garbage", with(good, set("x-amz-content-sha256", "abc")), nil, ErrInvalidArgument},
		{"content sha changed", with(good, set("x-amz-content-sha256", emptySHA256Hex)), nil, ErrSignatureDoesNotMatch},
		{"content sha not signed", s3Request{method: "GET", path: "/bucket/key"}.signWithout("x-amz-content-sha256"), nil, ErrAccessDenied},
		{"token not signed", s3Request{method: "GET", path: "/bucket/key"}.signWithout("x-amz-security-token"), nil, ErrAccessDenied},
		{"two tokens", with(good, add("x-amz-security-token", testToken)), nil, ErrInvalidArgument},
		{"token changed", with(good, set("x-amz-security-token", testToken+"x")), nil, ErrInvalidToken},
		{"token removed", with(good, del("x-amz-security-token")), testStore(""), ErrSignatureDoesNotMatch},
		{"method", &Request{Method: []byte("PUT"), RawPath: good.RawPath, RawQuery: good.RawQuery, Header: good.Header}, nil, ErrSignatureDoesNotMatch},
		{"path", &Request{Method: good.Method, RawPath: []byte("/bucket/kez"), RawQuery: good.RawQuery, Header: good.Header}, nil, ErrSignatureDoesNotMatch},
		{"path bad escape", &Request{Method: good.Method, RawPath: []byte("/bucket/%zz"), RawQuery: good.RawQuery, Header: good.Header}, nil, ErrInvalidRequest},
		{"query", &Request{Method: good.Method, RawPath: good.RawPath, RawQuery: []byte("versionId=4"), Header: good.Header}, nil, ErrSignatureDoesNotMatch},
		{"query added", &Request{Method: good.Method, RawPath: good.RawPath, RawQuery: []byte("versionId=3&acl"), Header: good.Header}, nil, ErrSignatureDoesNotMatch},
		{"query bad escape", &Request{Method: good.Method, RawPath: good.RawPath, RawQuery: []byte("versionId=%3"), Header: good.Header}, nil, ErrInvalidRequest},
		{"host", with(good, set("host", "127.0.0.1:9001")), nil, ErrSignatureDoesNotMatch},
		{"unknown key", good, staticStore{"OTHER", testSecret, testToken}, ErrInvalidAccessKeyID},
		{"wrong secret", good, staticStore{testAKID, testSecret + "x", testToken}, ErrSignatureDoesNotMatch},
		{"expired token", good, errStore{&Error{ErrExpiredToken, "The provided token has expired."}}, ErrExpiredToken},
		{"foreign store error", good, errStore{io.ErrUnexpectedEOF}, ErrAccessDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.store
			if store == nil {
				store = testStore(testToken)
			}
			var res Result
			err := testVerifier().Verify(tt.req, store, &res)
			wantCode(t, err, tt.want)
			if err == nil {
				if string(res.AccessKeyID) != testAKID || string(res.SessionToken) != testToken || res.Presigned ||
					res.Mode != PayloadUnsigned || !res.Time.Equal(testNow) || res.DecodedContentLength != -1 {
					t.Fatalf("result %+v", res)
				}
			}
		})
	}
}

// signWithout signs with header name left out of SignedHeaders but still
// sent, the way a careless client or a proxy adding headers would.
func (q s3Request) signWithout(name string) *Request {
	s := testSigner(testToken)
	r := q.sign(s)
	hs := r.Header.(headerList)
	var signed headerList
	var value []byte
	for _, h := range hs {
		switch string(h.Name) {
		case name:
			value = h.Value
		case "authorization":
		default:
			signed = append(signed, h)
		}
	}
	payload := UnsignedPayload
	if name == "x-amz-content-sha256" {
		payload = string(value)
	}
	auth, _ := s.AppendAuthorization(nil, &SignRequest{Method: r.Method, RawPath: r.RawPath, RawQuery: r.RawQuery,
		Headers: signed, PayloadHash: []byte(payload)}, testNow)
	out := append(signed, Header{Name: []byte(name), Value: value}, Header{Name: []byte("authorization"), Value: auth})
	return &Request{Method: r.Method, RawPath: r.RawPath, RawQuery: r.RawQuery, Header: out}
}

type errStore struct{ err error }

func (s errStore) Secret(_, _ []byte) ([]byte, error) { return nil, s.err }

func TestVerifySkew(t *testing.T) {
	for _, tt := range []struct {
		offset, maxSkew time.Duration
		want            ErrorCode
	}{
		{0, 0, 0},
		{15 * time.Minute, 0, 0},
		{-15 * time.Minute, 0, 0},
		{15*time.Minute + time.Second, 0, ErrRequestTimeTooSkewed},
		{-15*time.Minute - time.Second, 0, ErrRequestTimeTooSkewed},
		{2 * time.Minute, time.Minute, ErrRequestTimeTooSkewed},
		{59 * time.Second, time.Minute, 0},
	} {
		t.Run(fmt.Sprint(tt.offset, "/", tt.maxSkew), func(t *testing.T) {
			r := s3Request{method: "GET", path: "/b/k", at: testNow.Add(tt.offset)}.sign(testSigner(""))
			v := testVerifier()
			v.MaxSkew = tt.maxSkew
			var res Result
			wantCode(t, v.Verify(r, testStore(""), &res), tt.want)
		})
	}
}

func TestVerifyDateHeaderFallback(t *testing.T) {
	s := testSigner("")
	hs := headerList{
		{Name: []byte("date"), Value: []byte(testNow.Format("Mon, 02 Jan 2006 15:04:05 GMT"))},
		{Name: []byte("host"), Value: []byte("h")},
		{Name: []byte("x-amz-content-sha256"), Value: []byte(UnsignedPayload)},
	}
	auth, _ := s.AppendAuthorization(nil, &SignRequest{Method: []byte("GET"), RawPath: []byte("/b/k"),
		Headers: hs, PayloadHash: []byte(UnsignedPayload)}, testNow)
	r := &Request{Method: []byte("GET"), RawPath: []byte("/b/k"),
		Header: append(hs, Header{Name: []byte("authorization"), Value: auth})}
	var res Result
	wantCode(t, testVerifier().Verify(r, testStore(""), &res), 0)
	if !res.Time.Equal(testNow) || string(res.AmzDate()) != "20260501T100000Z" {
		t.Fatalf("time %v %s", res.Time, res.AmzDate())
	}
	bad := with(r, set("date", "yesterday"))
	wantCode(t, testVerifier().Verify(bad, testStore(""), &res), ErrAccessDenied)
}

func TestVerifyPayloadModes(t *testing.T) {
	sum := sha256.Sum256([]byte("hello"))
	hexSum := hex.EncodeToString(sum[:])
	tests := []struct {
		name    string
		payload string
		headers headerList
		want    ErrorCode
		mode    PayloadMode
		decoded int64
		trailer string
	}{
		{"unsigned", UnsignedPayload, nil, 0, PayloadUnsigned, -1, ""},
		{"sha256", hexSum, nil, 0, PayloadSHA256, -1, ""},
		{"sha256 upper-case", strings.ToUpper(hexSum), nil, 0, PayloadSHA256, -1, ""},
		{"streaming", StreamingPayload, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("5")},
			{Name: []byte("x-amz-trailer"), Value: []byte("x-amz-checksum-crc32")}}, 0, PayloadStreamingSigned, 5, ""},
		{"streaming trailer", StreamingPayloadTrailer, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("1048576")},
			{Name: []byte("x-amz-trailer"), Value: []byte("x-amz-checksum-crc64nvme")}}, 0, PayloadStreamingSignedTrailer, 1048576, "x-amz-checksum-crc64nvme"},
		{"unsigned trailer", StreamingUnsignedTrailer, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("0")},
			{Name: []byte("x-amz-trailer"), Value: []byte("x-amz-checksum-crc32c")}, {Name: []byte("content-encoding"), Value: []byte("aws-chunked")}},
			0, PayloadStreamingUnsignedTrailer, 0, "x-amz-checksum-crc32c"},
		{"unsigned trailer without trailer header", StreamingUnsignedTrailer, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("7")}},
			0, PayloadStreamingUnsignedTrailer, 7, ""},
		{"streaming without decoded length", StreamingPayload, nil, ErrMissingContentLength, 0, 0, ""},
		{"decoded length garbage", StreamingPayload, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("5x")}}, ErrInvalidArgument, 0, 0, ""},
		{"decoded length negative", StreamingPayload, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("-5")}}, ErrInvalidArgument, 0, 0, ""},
		{"decoded length huge", StreamingPayload, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("99999999999999999999")}}, ErrInvalidArgument, 0, 0, ""},
		{"two trailers", StreamingPayloadTrailer, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("5")},
			{Name: []byte("x-amz-trailer"), Value: []byte("a")}, {Name: []byte("x-amz-trailer"), Value: []byte("b")}}, ErrInvalidArgument, 0, 0, ""},
		{"sigv4a streaming", StreamingECDSAPayload, headerList{{Name: []byte("x-amz-decoded-content-length"), Value: []byte("5")}}, ErrNotImplemented, 0, 0, ""},
		{"sigv4a streaming trailer", StreamingECDSAPayloadTrailer, nil, ErrNotImplemented, 0, 0, ""},
		{"garbage", "STREAMING-SOMETHING", nil, ErrInvalidArgument, 0, 0, ""},
		{"short hex", hexSum[:63], nil, ErrInvalidArgument, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s3Request{method: "PUT", path: "/b/k", payload: tt.payload, headers: tt.headers}.sign(testSigner(""))
			var res Result
			err := testVerifier().Verify(r, testStore(""), &res)
			wantCode(t, err, tt.want)
			if err != nil {
				return
			}
			if res.Mode != tt.mode || res.DecodedContentLength != tt.decoded || string(res.Trailer()) != tt.trailer {
				t.Fatalf("mode %v decoded %d trailer %q", res.Mode, res.DecodedContentLength, res.Trailer())
			}
			if tt.mode == PayloadSHA256 && res.PayloadHash != sum {
				t.Fatalf("payload hash %x", res.PayloadHash)
			}
			var cfg ChunkedConfig
			res.ChunkedConfig(&cfg)
			if cfg.Signed != (tt.mode == PayloadStreamingSigned || tt.mode == PayloadStreamingSignedTrailer) ||
				string(cfg.Scope) != "20260501/us-east-1/s3/aws4_request" || string(cfg.AmzDate) != "20260501T100000Z" ||
				cfg.SeedSignature != res.Signature || cfg.SigningKey != res.SigningKey || cfg.DecodedLength != tt.decoded ||
				string(cfg.Trailer) != tt.trailer {
				t.Fatalf("chunked config %+v", cfg)
			}
		})
	}
}

// TestVerifyNonS3 covers services without x-amz-content-sha256: the payload
// hash is the header's if sent, else the caller's body hash, else empty.
func TestVerifyNonS3(t *testing.T) {
	s := &Signer{AccessKeyID: testAKID, SecretAccessKey: testSecret, Region: "us-east-1", Service: "sts"}
	body := []byte("Action=GetCallerIdentity&Version=2011-06-15")
	sum := sha256.Sum256(body)
	hexSum := hex.EncodeToString(sum[:])
	hs := headerList{{Name: []byte("host"), Value: []byte("sts.amazonaws.com")}, {Name: []byte("x-amz-date"), Value: AppendAmzDate(nil, testNow)}}
	auth, _ := s.AppendAuthorization(nil, &SignRequest{Method: []byte("POST"), RawPath: []byte("/"), Headers: hs, PayloadHash: []byte(hexSum)}, testNow)
	r := &Request{Method: []byte("POST"), RawPath: []byte("/"), Header: append(hs, Header{Name: []byte("authorization"), Value: auth})}
	v := NewVerifier("us-east-1", "sts")
	v.Now = testVerifier().Now
	var res Result
	wantCode(t, v.Verify(r, testStore(""), &res), ErrSignatureDoesNotMatch) // body hash unknown: empty hash assumed
	r.PayloadHash = []byte(hexSum)
	wantCode(t, v.Verify(r, testStore(""), &res), 0)
	if res.Mode != PayloadSHA256 || res.PayloadHash != sum {
		t.Fatalf("mode %v hash %x", res.Mode, res.PayloadHash)
	}
	r.PayloadHash = []byte("nothex")
	wantCode(t, v.Verify(r, testStore(""), &res), ErrInvalidArgument)
}

func TestVerifyPresignedS3(t *testing.T) {
	s := testSigner(testToken)
	rawURL := "https://127.0.0.1:9000/bucket/dir/a%20b%2Bc.txt?response-content-type=text%2Fplain"
	signed, err := s.Presign("GET", rawURL, nil, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(signed)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(signed, "https://127.0.0.1:9000/bucket/dir/a%20b%2Bc.txt?response-content-type=text%2Fplain&X-Amz-Algorithm=") {
		t.Fatalf("URL %s", signed)
	}
	host := headerList{{Name: []byte("host"), Value: []byte(u.Host)}}
	req := func(q string, hs headerList) *Request {
		return &Request{Method: []byte("GET"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(q), Header: hs}
	}
	q := u.RawQuery
	edit := func(param, value string) string { return replaceParam(q, param, func(string) string { return value }) }
	drop := func(param string) string {
		var out []string
		for _, p := range strings.Split(q, "&") {
			if !strings.HasPrefix(p, param+"=") {
				out = append(out, p)
			}
		}
		return strings.Join(out, "&")
	}
	tests := []struct {
		name  string
		req   *Request
		now   time.Duration
		store CredentialStore
		want  ErrorCode
	}{
		{"good", req(q, host), 0, nil, 0},
		{"good at the last second", req(q, host), time.Hour, nil, 0},
		{"expired", req(q, host), time.Hour + time.Second, nil, ErrAccessDenied},
		{"future within skew", req(q, host), -15 * time.Minute, nil, 0},
		{"future beyond skew", req(q, host), -16 * time.Minute, nil, ErrRequestTimeTooSkewed},
		{"also an Authorization header", req(q, append(host, Header{Name: []byte("authorization"), Value: []byte("AWS4-HMAC-SHA256 x")})), 0, nil, ErrInvalidArgument},
		{"missing date", req(drop("X-Amz-Date"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"missing signature", req(drop("X-Amz-Signature"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"missing signed headers", req(drop("X-Amz-SignedHeaders"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"duplicate expires", req(q+"&X-Amz-Expires=3600", host), 0, nil, ErrAuthorizationQueryParametersError},
		{"sigv4a", req(edit("X-Amz-Algorithm", AlgorithmECDSA), host), 0, nil, ErrNotImplemented},
		{"bad algorithm", req(edit("X-Amz-Algorithm", "AWS4-HMAC-SHA512"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"expires 0", req(edit("X-Amz-Expires", "0"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"expires negative", req(edit("X-Amz-Expires", "-1"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"expires over a week", req(edit("X-Amz-Expires", "604801"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"expires not a number", req(edit("X-Amz-Expires", "1h"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"expires changed", req(edit("X-Amz-Expires", "3601"), host), 0, nil, ErrSignatureDoesNotMatch},
		{"bad date", req(edit("X-Amz-Date", "20260501T250000Z"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"date other day", req(edit("X-Amz-Date", "20260502T100000Z"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"credential malformed", req(edit("X-Amz-Credential", "AKID%2F20260501%2Fus-east-1%2Fs3"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"credential region", req(edit("X-Amz-Credential", testAKID+"%2F20260501%2Feu-west-1%2Fs3%2Faws4_request"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"credential service", req(edit("X-Amz-Credential", testAKID+"%2F20260501%2Fus-east-1%2Fiam%2Faws4_request"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"credential terminal", req(edit("X-Amz-Credential", testAKID+"%2F20260501%2Fus-east-1%2Fs3%2Faws4"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"credential bad escape", req(edit("X-Amz-Credential", testAKID+"%2"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"unknown key", req(edit("X-Amz-Credential", "OTHER%2F20260501%2Fus-east-1%2Fs3%2Faws4_request"), host), 0, nil, ErrInvalidAccessKeyID},
		{"signed headers without host", req(edit("X-Amz-SignedHeaders", "x-amz-date"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"signature malformed", req(edit("X-Amz-Signature", "abc"), host), 0, nil, ErrAuthorizationQueryParametersError},
		{"signature changed", req(edit("X-Amz-Signature", strings.Repeat("0", 64)), host), 0, nil, ErrSignatureDoesNotMatch},
		{"token changed", req(edit("X-Amz-Security-Token", "other"), host), 0, nil, ErrInvalidToken},
		{"token removed", req(drop("X-Amz-Security-Token"), host), 0, testStore(""), ErrSignatureDoesNotMatch},
		{"token also in a header", req(q, append(host, Header{Name: []byte("x-amz-security-token"), Value: []byte(testToken)})), 0, nil, ErrInvalidArgument},
		{"other parameter changed", req(edit("response-content-type", "text%2Fhtml"), host), 0, nil, ErrSignatureDoesNotMatch},
		{"parameter added", req(q+"&acl", host), 0, nil, ErrSignatureDoesNotMatch},
		{"host changed", req(q, headerList{{Name: []byte("host"), Value: []byte("127.0.0.1:9001")}}), 0, nil, ErrSignatureDoesNotMatch},
		{"streaming payload", req(q+"&X-Amz-Content-Sha256="+StreamingPayload, host), 0, nil, ErrInvalidRequest},
		{"signed payload hash added", req(q+"&X-Amz-Content-Sha256="+emptySHA256Hex, host), 0, nil, ErrSignatureDoesNotMatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := testVerifier()
			v.Now = func() time.Time { return testNow.Add(tt.now) }
			store := tt.store
			if store == nil {
				store = testStore(testToken)
			}
			var res Result
			err := v.Verify(tt.req, store, &res)
			wantCode(t, err, tt.want)
			if err == nil && (!res.Presigned || string(res.AccessKeyID) != testAKID || string(res.SessionToken) != testToken ||
				res.Mode != PayloadUnsigned || !res.Time.Equal(testNow)) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestVerifyPresignMaxExpiry(t *testing.T) {
	s := testSigner("")
	signed, err := s.Presign("GET", "https://h/b/k", nil, 2*time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(signed)
	r := &Request{Method: []byte("GET"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(u.RawQuery),
		Header: headerList{{Name: []byte("host"), Value: []byte("h")}}}
	v := testVerifier()
	var res Result
	wantCode(t, v.Verify(r, testStore(""), &res), 0)
	v = testVerifier()
	v.MaxPresignExpiry = time.Hour
	wantCode(t, v.Verify(r, testStore(""), &res), ErrAuthorizationQueryParametersError)
}

// TestVerifyPresignedHeaderToken: a presigned request may carry its token as
// a signed header instead of a query parameter, never as an unsigned one.
func TestVerifyPresignedHeaderToken(t *testing.T) {
	s := testSigner("")
	tok := Header{Name: []byte("x-amz-security-token"), Value: []byte(testToken)}
	signed, err := s.Presign("GET", "https://h/b/k", []Header{tok}, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(signed)
	hs := headerList{{Name: []byte("host"), Value: []byte("h")}, tok}
	r := &Request{Method: []byte("GET"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(u.RawQuery), Header: hs}
	var res Result
	wantCode(t, testVerifier().Verify(r, testStore(testToken), &res), 0)
	if string(res.SessionToken) != testToken {
		t.Fatalf("token %q", res.SessionToken)
	}
	signed, _ = s.Presign("GET", "https://h/b/k", nil, time.Hour, testNow)
	u, _ = url.Parse(signed)
	r = &Request{Method: []byte("GET"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(u.RawQuery), Header: hs}
	wantCode(t, testVerifier().Verify(r, testStore(testToken), &res), ErrAccessDenied)
}

// TestVerifyResultReuse verifies different requests into one Result: nothing
// of an earlier request may leak into a later one.
func TestVerifyResultReuse(t *testing.T) {
	v := testVerifier()
	var res Result
	signed, _ := testSigner(testToken).Presign("GET", "https://h/b/k", nil, time.Hour, testNow)
	u, _ := url.Parse(signed)
	pre := &Request{Method: []byte("GET"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(u.RawQuery),
		Header: headerList{{Name: []byte("host"), Value: []byte("h")}}}
	wantCode(t, v.Verify(pre, testStore(testToken), &res), 0)
	streaming := s3Request{method: "PUT", path: "/b/k", payload: StreamingPayloadTrailer, headers: headerList{
		{Name: []byte("x-amz-decoded-content-length"), Value: []byte("10")}, {Name: []byte("x-amz-trailer"), Value: []byte("x-amz-checksum-crc32")}}}
	wantCode(t, v.Verify(streaming.sign(testSigner("")), testStore(""), &res), 0)
	if res.Presigned || len(res.SessionToken) != 0 || res.Mode != PayloadStreamingSignedTrailer || res.DecodedContentLength != 10 {
		t.Fatalf("after streaming: %+v", res)
	}
	plain := s3Request{method: "GET", path: "/b/k"}.sign(testSigner(""))
	wantCode(t, v.Verify(plain, testStore(""), &res), 0)
	if res.Mode != PayloadUnsigned || res.DecodedContentLength != -1 || len(res.Trailer()) != 0 {
		t.Fatalf("after plain: %+v", res)
	}
	wantCode(t, v.Verify(pre, testStore(testToken), &res), 0)
	if !res.Presigned || string(res.SessionToken) != testToken || string(res.AccessKeyID) != testAKID {
		t.Fatalf("after presigned again: %+v", res)
	}
}

// TestKeyCache checks the cache against direct derivation with more keys
// than it holds, from several goroutines.
func TestKeyCache(t *testing.T) {
	var c keyCache
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 * keyCacheSets * keyCacheWays {
				secret := []byte(fmt.Sprintf("secret-%d", (i*7+g)%(2*keyCacheSets*keyCacheWays)))
				date := []byte(fmt.Sprintf("202605%02d", 1+i%3))
				var want [32]byte
				got := c.get(secret, date, "us-east-1", "s3").mac.key
				DeriveSigningKey(&want, secret, date, []byte("us-east-1"), []byte("s3"))
				if got != want {
					errs <- fmt.Sprintf("%s %s: wrong key", secret, date)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// Region and service are part of the key.
	a := c.get([]byte("s"), []byte("20260501"), "us-east-1", "s3").mac.key
	b := c.get([]byte("s"), []byte("20260501"), "eu-west-1", "s3").mac.key
	if a == b {
		t.Fatal("region ignored")
	}
	b = c.get([]byte("s"), []byte("20260501"), "us-east-1", "sts").mac.key
	if a == b {
		t.Fatal("service ignored")
	}
}

func TestVerifyConcurrent(t *testing.T) {
	v := testVerifier()
	reqs := []*Request{
		s3Request{method: "GET", path: "/b/one"}.sign(testSigner(testToken)),
		s3Request{method: "PUT", path: "/b/two", query: "partNumber=1&uploadId=x"}.sign(testSigner(testToken)),
	}
	bad := with(reqs[0], set("host", "evil"))
	var wg sync.WaitGroup
	fail := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res Result
			for i := range 200 {
				r := reqs[(i+g)%2]
				if err := v.Verify(r, testStore(testToken), &res); err != nil {
					fail <- err
					return
				}
				if err := v.Verify(bad, testStore(testToken), &res); CodeOf(err) != ErrSignatureDoesNotMatch {
					fail <- fmt.Errorf("bad request: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
}

func TestVerifyNoAllocs(t *testing.T) {
	testsupport.SkipUnderRace(t, "counts allocations")
	r := benchRequest(t, testNow)
	v := testVerifier()
	store := &fixedStore{[]byte(benchSecret)}
	var res Result
	if err := v.Verify(r, store, &res); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := v.Verify(r, store, &res); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Fatalf("%v allocations per verification", n)
	}
}

// readBody reads all of res.Body over in, whose content length is n; the
// error is the one reading ended with.
func readBody(t *testing.T, res Result, in []byte, n int64) ([]byte, error) {
	t.Helper()
	body, err := res.Body(bytes.NewReader(in), n)
	if err != nil {
		t.Fatal(err)
	}
	return io.ReadAll(body)
}

func TestResultBody(t *testing.T) {
	sum := sha256.Sum256([]byte("hello"))
	t.Run("unsigned", func(t *testing.T) {
		res := Result{Mode: PayloadUnsigned, DecodedContentLength: -1}
		if b, err := readBody(t, res, []byte("hello world"), 5); err != nil || string(b) != "hello" {
			t.Fatalf("%q %v", b, err)
		}
		if _, err := readBody(t, res, []byte("hel"), 5); CodeOf(err) != ErrIncompleteBody {
			t.Fatalf("short body: %v", err)
		}
		if b, _ := readBody(t, res, []byte("anything"), -1); string(b) != "anything" {
			t.Fatalf("%q", b)
		}
	})
	t.Run("sha256", func(t *testing.T) {
		res := Result{Mode: PayloadSHA256, PayloadHash: sum, DecodedContentLength: -1}
		if b, err := readBody(t, res, []byte("hello"), 5); err != nil || string(b) != "hello" {
			t.Fatalf("%q %v", b, err)
		}
		if _, err := readBody(t, res, []byte("hellp"), 5); CodeOf(err) != ErrXAmzContentSHA256Mismatch {
			t.Fatalf("changed body: %v", err)
		}
	})
	t.Run("streaming", func(t *testing.T) {
		// Signed aws-chunked body produced by the encoder for a verified
		// request, decoded through Result.Body.
		payload := bytes.Repeat([]byte("duckicelake "), 1000)
		r := s3Request{method: "PUT", path: "/b/k", payload: StreamingPayload, headers: headerList{
			{Name: []byte("x-amz-decoded-content-length"), Value: fmt.Appendf(nil, "%d", len(payload))}}}.sign(testSigner(""))
		var res Result
		wantCode(t, testVerifier().Verify(r, testStore(""), &res), 0)
		var cfg ChunkedConfig
		res.ChunkedConfig(&cfg)
		wire, err := io.ReadAll(NewChunkedEncoder(bytes.NewReader(payload), &cfg, 4096))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := readBody(t, res, wire, int64(len(wire))); err != nil || !bytes.Equal(b, payload) {
			t.Fatalf("decoded %d bytes, %v", len(b), err)
		}
		wire[len(wire)/2] ^= 1
		if _, err := readBody(t, res, wire, int64(len(wire))); err == nil {
			t.Fatal("corrupted chunk accepted")
		}
		if _, err := res.Body(bytes.NewReader(wire), int64(len(payload)-1)); CodeOf(err) != ErrIncompleteBody {
			t.Fatalf("short content length: %v", err)
		}
		res.DecodedContentLength = -1
		if _, err := res.Body(bytes.NewReader(wire), -1); CodeOf(err) != ErrMissingContentLength {
			t.Fatalf("no decoded length: %v", err)
		}
	})
}
