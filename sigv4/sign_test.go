package sigv4

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/duckicelake/duckicelake/internal/pct"
)

// S3 keys that clients must encode, and how the SDKs put them on the wire:
// every byte but unreserved ones and '/' percent-encoded.
var awkwardKeys = []string{
	"plain.parquet",
	"dir/sub dir/file with spaces.txt",
	"a+b=c&d;e,f.txt",
	"ünïcødé/ключ/文件.parquet",
	"tilde~and%percent%20literal",
	"emoji-😀-key",
	"quote'\"<>#?*!$()@:[]{}|^`\\.txt",
	"double//slash/./dot/../segments/",
	"encoded%2Fslash-literal",
	" leading and trailing ",
}

func wirePath(bucket, key string) string {
	return string(pct.AppendEncode([]byte("/"+bucket+"/"), []byte(key), true))
}

// TestSignVerifyRoundTrip signs S3 requests with our Signer and verifies
// them: header auth with and without a session token, unsigned and hashed
// payloads, and awkward keys and queries.
func TestSignVerifyRoundTrip(t *testing.T) {
	body := []byte("some parquet bytes")
	sum := sha256.Sum256(body)
	for _, token := range []string{"", testToken} {
		for _, key := range awkwardKeys {
			for _, payload := range []string{UnsignedPayload, hex.EncodeToString(sum[:])} {
				q := s3Request{
					method:  "PUT",
					path:    wirePath("bucket", key),
					query:   "tagging&x-id=PutObject&prefix=" + string(pct.AppendEncode(nil, []byte(key), false)),
					payload: payload,
					headers: headerList{
						{Name: []byte("content-type"), Value: []byte("application/octet-stream")},
						{Name: []byte("x-amz-meta-note"), Value: []byte("  two   spaces  ")},
					},
				}
				r := q.sign(testSigner(token))
				var res Result
				if err := testVerifier().Verify(r, testStore(token), &res); err != nil {
					t.Fatalf("token %q key %q payload %s: %v", token, key, payload, err)
				}
				if string(res.SessionToken) != token {
					t.Fatalf("token %q", res.SessionToken)
				}
				if payload != UnsignedPayload && (res.Mode != PayloadSHA256 || res.PayloadHash != sum) {
					t.Fatalf("mode %v", res.Mode)
				}
				// The key arrives with one byte changed: refused.
				bad := *r
				bad.RawPath = []byte(wirePath("bucket", key+"x"))
				if err := testVerifier().Verify(&bad, testStore(token), &res); CodeOf(err) != ErrSignatureDoesNotMatch {
					t.Fatalf("changed key %q: %v", key, err)
				}
			}
		}
	}
}

// TestSignMatchesSDK checks that our Signer produces exactly the
// Authorization header aws-sdk-go-v2's signer produces for S3, and that the
// verifier accepts what the SDK signs.
func TestSignMatchesSDK(t *testing.T) {
	sdk := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	ctx := context.Background()
	for _, token := range []string{"", testToken} {
		creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token}
		for _, key := range awkwardKeys {
			path := wirePath("my-bucket", key)
			query := "list-type=2&prefix=" + url.QueryEscape(key) + "&delimiter=%2F&encoding-type=url"
			u := &url.URL{Scheme: "http", Host: "127.0.0.1:9000", Path: "/my-bucket/" + key, RawPath: path, RawQuery: query}
			req, err := http.NewRequest("GET", u.String(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.EscapedPath() != path {
				t.Fatalf("URL path %q, want %q", req.URL.EscapedPath(), path)
			}
			req.Header.Set("X-Amz-Content-Sha256", UnsignedPayload)
			req.Header.Set("Range", "bytes=0-99")
			if err := sdk.SignHTTP(ctx, creds, req, UnsignedPayload, "s3", "us-east-1", testNow); err != nil {
				t.Fatal(err)
			}
			want := req.Header.Get("Authorization")

			hs := headerList{{Name: []byte("host"), Value: []byte(req.Host)}}
			for name, vs := range req.Header {
				if name == "Authorization" {
					continue
				}
				for _, v := range vs {
					hs = append(hs, Header{Name: []byte(strings.ToLower(name)), Value: []byte(v)})
				}
			}
			got, _ := testSigner(token).AppendAuthorization(nil, &SignRequest{
				Method: []byte("GET"), RawPath: []byte(path), RawQuery: []byte(req.URL.RawQuery),
				Headers: hs, PayloadHash: []byte(UnsignedPayload),
			}, testNow)
			if string(got) != want {
				t.Errorf("key %q:\n got %s\nwant %s", key, got, want)
			}

			// The request as net/http receives it.
			req.RequestURI = req.URL.RequestURI()
			var res Result
			if err := testVerifier().Verify(FromHTTP(req), testStore(token), &res); err != nil {
				t.Errorf("key %q: SDK-signed request: %v", key, err)
			}
		}
	}
}

// TestPresignMatchesSDK compares Presign with the SDK's presigner and
// verifies both URLs.
func TestPresignMatchesSDK(t *testing.T) {
	sdk := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	for _, token := range []string{"", testToken} {
		creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret, SessionToken: token}
		for _, key := range awkwardKeys {
			base := "https://127.0.0.1:9000" + wirePath("bucket", key) + "?response-content-disposition=attachment%3B%20filename%3D%22x%22"
			req, err := http.NewRequest("GET", base+"&X-Amz-Expires=900", nil)
			if err != nil {
				t.Fatal(err)
			}
			sdkURL, _, err := sdk.PresignHTTP(context.Background(), creds, req, UnsignedPayload, "s3", "us-east-1", testNow)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := testSigner(token).Presign("GET", base, nil, 15*time.Minute, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := paramOf(t, sdkURL, "X-Amz-Signature"), paramOf(t, ours, "X-Amz-Signature"); a != b || len(a) != 64 {
				t.Errorf("key %q: signature %s, SDK %s\nours %s\nsdk  %s", key, b, a, ours, sdkURL)
			}
			for _, signed := range []string{sdkURL, ours} {
				u, err := url.Parse(signed)
				if err != nil {
					t.Fatal(err)
				}
				r := &Request{Method: []byte("GET"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(u.RawQuery),
					Header: headerList{{Name: []byte("host"), Value: []byte(u.Host)}}}
				var res Result
				if err := testVerifier().Verify(r, testStore(token), &res); err != nil {
					t.Errorf("key %q: %v\n%s", key, err, signed)
				}
			}
		}
	}
}

func paramOf(t *testing.T, rawURL, name string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get(name)
}

func TestPresignSignedHeadersAndToken(t *testing.T) {
	s := testSigner(testToken)
	extra := []Header{{Name: []byte("X-Amz-Meta-Owner"), Value: []byte("ana")}, {Name: []byte("Content-Type"), Value: []byte("text/csv")}}
	signed, err := s.Presign("PUT", "http://h:8080/b/k.csv", extra, time.Minute, testNow)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(signed)
	q := u.Query()
	if q.Get("X-Amz-SignedHeaders") != "content-type;host;x-amz-meta-owner" || q.Get("X-Amz-Security-Token") != testToken ||
		q.Get("X-Amz-Expires") != "60" || q.Get("X-Amz-Date") != "20260501T100000Z" ||
		q.Get("X-Amz-Credential") != testAKID+"/20260501/us-east-1/s3/aws4_request" {
		t.Fatalf("query %v", q)
	}
	hs := headerList{
		{Name: []byte("host"), Value: []byte("h:8080")},
		{Name: []byte("content-type"), Value: []byte("text/csv")},
		{Name: []byte("x-amz-meta-owner"), Value: []byte("ana")},
	}
	r := &Request{Method: []byte("PUT"), RawPath: []byte(u.EscapedPath()), RawQuery: []byte(u.RawQuery), Header: hs}
	var res Result
	wantCode(t, testVerifier().Verify(r, testStore(testToken), &res), 0)
	r.Header = with(r, set("x-amz-meta-owner", "bob")).Header
	wantCode(t, testVerifier().Verify(r, testStore(testToken), &res), ErrSignatureDoesNotMatch)
}

func TestPresignErrors(t *testing.T) {
	s := testSigner("")
	for name, tt := range map[string]struct {
		url     string
		expires time.Duration
	}{
		"no expiry":        {"https://h/b/k", 0},
		"sub-second":       {"https://h/b/k", 500 * time.Millisecond},
		"over a week":      {"https://h/b/k", 7*24*time.Hour + time.Second},
		"no host":          {"/b/k", time.Minute},
		"bad URL":          {"https://h/b/%zz", time.Minute},
		"already signed":   {"https://h/b/k?X-Amz-Signature=abc", time.Minute},
		"bad query escape": {"https://h/b/k?a=%zz", time.Minute},
	} {
		if _, err := s.Presign("GET", tt.url, nil, tt.expires, testNow); err == nil {
			t.Errorf("%s: presigned", name)
		}
	}
	if _, err := s.Presign("GET", "https://h/b/k", nil, 7*24*time.Hour, testNow); err != nil {
		t.Errorf("a week: %v", err)
	}
}

// TestSignerKeyFollowsFields: the signer's cached key must not outlive a
// change of secret or a new day.
func TestSignerKeyFollowsFields(t *testing.T) {
	s := testSigner("")
	r := &SignRequest{Method: []byte("GET"), RawPath: []byte("/b/k"),
		Headers: []Header{{Name: []byte("host"), Value: []byte("h")}}, PayloadHash: []byte(UnsignedPayload)}
	_, a := s.AppendAuthorization(nil, r, testNow)
	s.SecretAccessKey += "x"
	_, b := s.AppendAuthorization(nil, r, testNow)
	fresh := testSigner("")
	fresh.SecretAccessKey = s.SecretAccessKey
	_, c := fresh.AppendAuthorization(nil, r, testNow)
	if a == b || b != c {
		t.Fatal("key not re-derived after the secret changed")
	}
	_, d := s.AppendAuthorization(nil, r, testNow.Add(24*time.Hour))
	_, e := fresh.AppendAuthorization(nil, r, testNow.Add(24*time.Hour))
	if d != e || d == b {
		t.Fatal("key not re-derived on a new day")
	}
}
