package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithy "github.com/aws/smithy-go"

	dilcreds "github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// adv is the setting of an adversarial test: a credential that may read,
// write and list under Prefix only, and objects the backend holds around it.
//
//	Root/granted/existing.bin   in scope, holds Orig (overwrite target)
//	Root/secret/s.bin           out of scope, holds Secret
//	Root/granted-sibling/x.bin  out of scope: shares the grant's prefix but for the '/'
//
// unchanged checks after each attack that the backend still holds exactly
// these outside the grant, and Orig in scope.
type adv struct {
	e       *stackEnv
	c       creds
	Root    string
	Prefix  string
	Exist   string
	Orig    []byte
	Secret  string
	SData   []byte
	Sibling string
	addr    string // the gateway's host:port
}

func newAdv(t *testing.T, name string) *adv {
	t.Helper()
	e := gatewayEnv(t)
	root := uniquePrefix(t, "adv-"+name)
	a := &adv{
		e: e, Root: root, Prefix: root + "granted/",
		Exist: root + "granted/existing.bin", Orig: randomBytes(t, 2048),
		Secret: root + "secret/s.bin", SData: randomBytes(t, 2048),
		Sibling: root + "granted-sibling/x.bin",
	}
	u, err := url.Parse(e.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	a.addr = u.Host
	e.backendPut(t, a.Exist, a.Orig)
	e.backendPut(t, a.Secret, a.SData)
	e.backendPut(t, a.Sibling, a.SData)
	a.c = e.mint(t, mintOpts{Principal: "adv-" + name, Grants: []string{e.Bucket + ":" + a.Prefix + ":rw"}, TTL: "1h"})
	return a
}

// unchanged fails the test if anything outside the grant changed, or the
// in-scope object no longer holds Orig.
func (a *adv) unchanged(t *testing.T, what string) {
	t.Helper()
	var outside []string
	for _, k := range a.e.backendKeys(t, a.Root) {
		if !strings.HasPrefix(k, a.Prefix) {
			outside = append(outside, k)
		}
	}
	if want := []string{a.Sibling, a.Secret}; !slices.Equal(outside, want) {
		t.Errorf("%s: keys outside the grant are now %q, want %q", what, outside, want)
	}
	for _, k := range []string{a.Secret, a.Sibling} {
		if got, _ := a.e.backendGet(t, k); !bytes.Equal(got, a.SData) {
			t.Errorf("%s: %s changed", what, k)
		}
	}
	if got, _ := a.e.backendGet(t, a.Exist); !bytes.Equal(got, a.Orig) {
		t.Errorf("%s: %s no longer holds its original bytes", what, a.Exist)
	}
}

// client is an aws-sdk-go-v2 client of the gateway with credential c.
func (a *adv) client(c creds) *s3.Client {
	return a.e.s3Client(a.e.Gateway, c, aws.RequestChecksumCalculationWhenRequired)
}

// path is the request target of key in the stack's bucket, each segment
// escaped the way the SDKs do.
func (a *adv) path(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/" + a.e.Bucket + "/" + strings.Join(segs, "/")
}

// do signs w with c now and sends it to the gateway.
func (a *adv) do(t *testing.T, c creds, w *wireReq, payloadHash string) wireResp {
	t.Helper()
	if w.Send == 0 {
		w.Send = -1
	}
	a.sign(t, c, w, payloadHash, time.Now().UTC())
	return send(t, a.addr, w)
}

// expect fails unless r has one of the statuses and, when codes are given,
// one of the codes. It also fails if the body shows a byte of the secret.
func (a *adv) expect(t *testing.T, what string, r wireResp, statuses []int, codes ...string) {
	t.Helper()
	if !slices.Contains(statuses, r.Status) || (len(codes) > 0 && !slices.Contains(codes, r.code())) {
		t.Errorf("%s: got %s; want status %v code %v", what, r, statuses, codes)
	} else {
		t.Logf("%s: %d %s", what, r.Status, r.code())
	}
	a.noLeak(t, what, r.Body)
}

// noLeak fails if body holds the secret's bytes or names a key outside the
// grant. An error document may echo what the client itself sent (its
// <Resource> and <Key>); only the rest of it counts.
func (a *adv) noLeak(t *testing.T, what string, body []byte) {
	t.Helper()
	if len(body) > 0 && bytes.Contains(body, a.SData[:64]) {
		t.Errorf("%s: the response carries the secret object's bytes", what)
	}
	if bytes.Contains(body, []byte("<Error>")) {
		body = dropElement(dropElement(body, "Resource"), "Key")
	}
	for _, name := range []string{"secret/s.bin", "granted-sibling"} {
		if bytes.Contains(body, []byte(name)) {
			t.Errorf("%s: the response names %q, a key outside the grant: %s", what, name, body)
		}
	}
}

// dropElement returns body without its first <name>…</name> element.
func dropElement(body []byte, name string) []byte {
	open, end := []byte("<"+name+">"), []byte("</"+name+">")
	i := bytes.Index(body, open)
	j := bytes.Index(body, end)
	if i < 0 || j < i {
		return body
	}
	return append(slices.Clone(body[:i]), body[j+len(end):]...)
}

var (
	s403 = []int{http.StatusForbidden}
	s400 = []int{http.StatusBadRequest}
	s4xx = []int{400, 403, 404, 405, 411, 413, 431}
)

// mintWith mints a credential with a keyring of our own: the stack's key
// (or another), at a chosen clock.
func mintWith(t *testing.T, key dilcreds.Key, now time.Time, grant dilcreds.Grant) creds {
	t.Helper()
	kr, err := dilcreds.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	kr.Now = func() time.Time { return now }
	m, err := kr.Mint(dilcreds.Claims{Principal: "adv-tokens", Grants: []dilcreds.Grant{grant}})
	if err != nil {
		t.Fatal(err)
	}
	return creds{AccessKeyID: m.AccessKeyID, SecretAccessKey: m.SecretAccessKey, SessionToken: m.SessionToken}
}

// stackMintKey reads the stack's minting key (DUCKICELAKE_TEST_MINT_KEYS,
// "id:hex secret").
func stackMintKey(t *testing.T) dilcreds.Key {
	t.Helper()
	id, secret := testsupport.RequireStack(t, testsupport.GatewayPart).Gateway.MintKey(t)
	s, err := dilcreds.ParseKeySecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	return dilcreds.Key{ID: id, Secret: s}
}

func TestAdversarialTokens(t *testing.T) {
	a := newAdv(t, "tokens")
	key := stackMintKey(t)
	grant := dilcreds.Grant{Bucket: a.e.Bucket, Prefix: a.Prefix, Access: dilcreds.Read | dilcreds.Write | dilcreds.List}
	now := time.Now()

	other := randomBytes(t, 32)
	flip := func(s string) string {
		b := []byte(s)
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	valid := a.c
	second := a.e.mint(t, mintOpts{Principal: "adv-second", Grants: []string{a.e.Bucket + ":" + a.Prefix + ":rw"}})

	cases := []struct {
		name     string
		c        creds
		unsigned bool // send the session token outside the signature
		statuses []int
		code     string
	}{
		{"expired", mintWith(t, key, now.Add(-2*time.Hour), grant), false, s400, "ExpiredToken"},
		{"not yet valid", mintWith(t, key, now.Add(time.Hour), grant), false, s400, "InvalidToken"},
		{"tampered", creds{valid.AccessKeyID, valid.SecretAccessKey, flip(valid.SessionToken)}, false, s400, "InvalidToken"},
		{"foreign key, same id", mintWith(t, dilcreds.Key{ID: key.ID, Secret: other}, now, grant), false, s400, "InvalidToken"},
		{"foreign key, unknown id", mintWith(t, dilcreds.Key{ID: "other", Secret: other}, now, grant), false, s400, "InvalidToken"},
		{"token of another credential", creds{valid.AccessKeyID, valid.SecretAccessKey, second.SessionToken}, false, s403, "InvalidAccessKeyId"},
		{"wrong secret", creds{valid.AccessKeyID, flip(valid.SecretAccessKey), valid.SessionToken}, false, s403, "SignatureDoesNotMatch"},
		{"no token", creds{valid.AccessKeyID, valid.SecretAccessKey, ""}, false, s403, "InvalidAccessKeyId"},
		{"token not signed", valid, true, s403, "AccessDenied"},
		{"backend root keys", a.e.root(), false, s403, "InvalidAccessKeyId"},
	}

	// The control: the valid credential reads and writes in scope.
	r := a.do(t, valid, &wireReq{Method: "GET", Target: a.path(a.Exist)}, "")
	if r.Status != 200 || !bytes.Equal(r.Body, a.Orig) {
		t.Fatalf("control GET with the valid credential: %s", r)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range []*wireReq{
				{Method: "GET", Target: a.path(a.Exist)},
				{Method: "GET", Target: a.path(a.Secret)},
				{Method: "PUT", Target: a.path(a.Exist), Body: []byte("overwritten")},
				{Method: "PUT", Target: a.path(a.Prefix + "new-" + strings.ReplaceAll(tc.name, " ", "-")), Body: []byte("created")},
				{Method: "GET", Target: "/" + a.e.Bucket + "?list-type=2&prefix=" + url.QueryEscape(a.Prefix)},
			} {
				what := w.Method + " " + w.Target
				c := tc.c
				if tc.unsigned {
					c.SessionToken = ""
				}
				w.Send = -1
				a.sign(t, c, w, "", time.Now().UTC())
				if tc.unsigned {
					w.Header = append(w.Header, [2]string{"X-Amz-Security-Token", tc.c.SessionToken})
				}
				r := send(t, a.addr, w)
				a.expect(t, what, r, tc.statuses, tc.code)
			}
			if got, _ := a.e.backendGet(t, a.Prefix+"new-"+strings.ReplaceAll(tc.name, " ", "-")); got != nil {
				t.Errorf("a refused PUT created its object")
			}
			a.unchanged(t, tc.name)
		})
	}

	// Presigned: an expired URL and a tampered one.
	ps := s3.NewPresignClient(a.client(valid))
	req, err := ps.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: &a.e.Bucket, Key: &a.Exist},
		s3.WithPresignExpires(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	u, _ := url.Parse(req.URL)
	r = send(t, a.addr, &wireReq{Method: "GET", Target: u.RequestURI(), Send: -1})
	a.expect(t, "expired presigned GET", r, s403, "AccessDenied")
	req, _ = ps.PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: &a.e.Bucket, Key: &a.Exist})
	u, _ = url.Parse(req.URL)
	q := u.Query()
	q.Set("X-Amz-Security-Token", second.SessionToken)
	u.RawQuery = q.Encode()
	r = send(t, a.addr, &wireReq{Method: "GET", Target: u.RequestURI(), Send: -1})
	a.expect(t, "presigned GET with a swapped token", r, s4xx)
}

// apiCode is the S3 error code of an aws-sdk-go-v2 error and its HTTP status.
func apiCode(err error) (string, int) {
	var ae smithy.APIError
	code := ""
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return code, httpStatus(err)
}

func TestAdversarialScope(t *testing.T) {
	a := newAdv(t, "scope")
	ctx := context.Background()
	cl := a.client(a.c)
	root := a.e.backend()
	b := aws.String(a.e.Bucket)
	k := aws.String
	outNew := a.Root + "secret/new.bin"
	body := func() *bytes.Reader { return bytes.NewReader([]byte("attack")) }

	// An upload the operator started on an out-of-scope key, and one of ours.
	rootUp, err := root.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k(a.Secret)})
	if err != nil {
		t.Fatal(err)
	}
	defer root.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k(a.Secret), UploadId: rootUp.UploadId})
	ourKey := a.Prefix + "mp.bin"
	ourUp, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k(ourKey)})
	if err != nil {
		t.Fatalf("CreateMultipartUpload in scope: %v", err)
	}
	defer cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k(ourKey), UploadId: ourUp.UploadId})
	one := aws.Int32(1)

	ops := []struct {
		name string
		do   func() error
	}{
		{"GetObject", func() error { _, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k(a.Secret)}); return err }},
		{"GetObject sibling prefix", func() error {
			_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k(a.Sibling)})
			return err
		}},
		{"HeadObject", func() error {
			_, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k(a.Secret)})
			return err
		}},
		{"PutObject new", func() error {
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k(outNew), Body: body()})
			return err
		}},
		{"PutObject overwrite", func() error {
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k(a.Secret), Body: body()})
			return err
		}},
		{"DeleteObject", func() error {
			_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k(a.Secret)})
			return err
		}},
		{"CopyObject to outside", func() error {
			_, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: k(outNew), CopySource: k(a.e.Bucket + "/" + a.Exist)})
			return err
		}},
		{"CopyObject from outside", func() error {
			_, err := cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: k(a.Prefix + "stolen.bin"), CopySource: k(a.e.Bucket + "/" + a.Secret)})
			return err
		}},
		{"CreateMultipartUpload", func() error {
			_, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k(outNew)})
			return err
		}},
		{"UploadPart", func() error {
			_, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k(a.Secret), UploadId: rootUp.UploadId, PartNumber: one, Body: body()})
			return err
		}},
		{"UploadPartCopy from outside", func() error {
			_, err := cl.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: k(ourKey), UploadId: ourUp.UploadId, PartNumber: one,
				CopySource: k(a.e.Bucket + "/" + a.Secret)})
			return err
		}},
		{"ListParts", func() error {
			_, err := cl.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k(a.Secret), UploadId: rootUp.UploadId})
			return err
		}},
		{"CompleteMultipartUpload", func() error {
			_, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k(a.Secret), UploadId: rootUp.UploadId,
				MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: one, ETag: k(`"x"`)}}}})
			return err
		}},
		{"AbortMultipartUpload", func() error {
			_, err := cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k(a.Secret), UploadId: rootUp.UploadId})
			return err
		}},
		{"GetObjectTagging", func() error {
			_, err := cl.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: k(a.Secret)})
			return err
		}},
		{"PutObjectTagging", func() error {
			_, err := cl.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k(a.Secret),
				Tagging: &types.Tagging{TagSet: []types.Tag{{Key: k("a"), Value: k("b")}}}})
			return err
		}},
		{"DeleteObjectTagging", func() error {
			_, err := cl.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: b, Key: k(a.Secret)})
			return err
		}},
		{"GetObjectAttributes", func() error {
			_, err := cl.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k(a.Secret),
				ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}})
			return err
		}},
		{"DeleteObjects mixed", func() error {
			out, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
				{Key: k(a.Exist)}, {Key: k(a.Secret)}}}})
			if err == nil {
				return fmt.Errorf("DeleteObjects answered 200: deleted %d, errors %d", len(out.Deleted), len(out.Errors))
			}
			return err
		}},
		{"GetObjectAcl (unknown sub-resource) in scope", func() error {
			_, err := cl.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: k(a.Exist)})
			return err
		}},
		{"PutObjectAcl in scope", func() error {
			_, err := cl.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: b, Key: k(a.Exist), ACL: types.ObjectCannedACLPublicRead})
			return err
		}},
		{"DeleteBucket", func() error { _, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); return err }},
		{"CreateBucket", func() error {
			_, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: k("dil-adv-created")})
			return err
		}},
		{"PutBucketPolicy", func() error {
			_, err := cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: b, Policy: k(`{"Version":"2012-10-17","Statement":[]}`)})
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			err := op.do()
			code, status := apiCode(err)
			if err == nil || status != http.StatusForbidden || (code != "AccessDenied" && code != "Forbidden") {
				t.Errorf("%s: err %v (code %q, status %d); want 403 AccessDenied", op.name, err, code, status)
			} else {
				t.Logf("%s: %d %s", op.name, status, code)
			}
			a.unchanged(t, op.name)
		})
	}
	if _, err := root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: k("dil-adv-created")}); err == nil {
		t.Errorf("CreateBucket through the gateway created the bucket")
		root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: k("dil-adv-created")})
	}
	// The operator's upload is intact: its part list is still readable and empty.
	if lp, err := root.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k(a.Secret), UploadId: rootUp.UploadId}); err != nil || len(lp.Parts) != 0 {
		t.Errorf("the operator's upload was touched: %v, %d parts", err, len(lp.Parts))
	}

	// Lists outside the grant, sent raw so the bodies can be searched for
	// names outside the grant.
	lists := []string{
		"list-type=2&prefix=" + url.QueryEscape(a.Root+"secret/"),
		"list-type=2&prefix=" + url.QueryEscape(a.Root),
		"list-type=2&prefix=" + url.QueryEscape(strings.TrimSuffix(a.Prefix, "/")), // also lists granted-sibling/
		"list-type=2",
		"list-type=2&prefix=",
		"list-type=2&prefix=" + url.QueryEscape(a.Prefix) + "&prefix=" + url.QueryEscape(a.Root),
		"prefix=" + url.QueryEscape(a.Root),         // ListObjects v1
		"uploads&prefix=" + url.QueryEscape(a.Root), // ListMultipartUploads
		"uploads", // … of the whole bucket
		"versions&prefix=" + url.QueryEscape(a.Root), // ListObjectVersions
		"list-type=2&prefix=" + url.QueryEscape(a.Prefix+"../secret/"),
	}
	for _, q := range lists {
		r := a.do(t, a.c, &wireReq{Method: "GET", Target: "/" + a.e.Bucket + "?" + q}, "")
		a.expect(t, "list "+q, r, s4xx)
	}
	// In scope, a list never shows what lies outside, whatever the
	// delimiter, start-after or continuation token.
	for _, q := range []string{
		"list-type=2&prefix=" + url.QueryEscape(a.Prefix) + "&start-after=" + url.QueryEscape(a.Root),
		"list-type=2&prefix=" + url.QueryEscape(a.Prefix) + "&delimiter=%2F",
		"list-type=2&prefix=" + url.QueryEscape(a.Prefix) + "&encoding-type=url",
		"prefix=" + url.QueryEscape(a.Prefix) + "&marker=" + url.QueryEscape(a.Root),
	} {
		r := a.do(t, a.c, &wireReq{Method: "GET", Target: "/" + a.e.Bucket + "?" + q}, "")
		a.expect(t, "list in scope "+q, r, []int{200})
	}
	a.unchanged(t, "lists")
}

func TestAdversarialKeyPaths(t *testing.T) {
	a := newAdv(t, "paths")
	p := "/" + a.e.Bucket + "/" + a.Prefix // ends in '/'
	targets := []string{
		p + "../secret/s.bin",
		p + "./../secret/s.bin",
		p + "x/../../secret/s.bin",
		p + "%2e%2e/secret/s.bin",
		p + "%2E%2E/secret/s.bin",
		p + ".%2e/secret/s.bin",
		p + "..%2Fsecret%2Fs.bin",
		p + "%2e%2e%2fsecret%2fs.bin",
		p + "%252e%252e/secret/s.bin",
		p + "%252e%252e%252fsecret%252fs.bin",
		p + "..\\secret\\s.bin",
		p + "..%5Csecret%5Cs.bin",
		p + "%C0%AE%C0%AE/secret/s.bin",       // overlong UTF-8 for '.'
		p + "%EF%BC%8E%EF%BC%8E/secret/s.bin", // fullwidth full stops
		p + "%E2%80%A5/secret/s.bin",          // two-dot leader
		p + "%00/../secret/s.bin",             // NUL
		p + "..;/secret/s.bin",
		"/" + a.e.Bucket + "//" + a.Prefix + "../secret/s.bin",
		"/" + a.e.Bucket + "/./" + a.Prefix + "../secret/s.bin",
		"/" + a.e.Bucket + "%2F" + a.Prefix + "../secret/s.bin",
		"/./" + a.e.Bucket + "/" + a.Secret,
		"/x/../" + a.e.Bucket + "/" + a.Secret,
		"/" + a.e.Bucket + "/" + a.Prefix[:len(a.Prefix)-1] + "%2F..%2F..%2F" + strings.TrimPrefix(a.Secret, a.Root),
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			r := a.do(t, a.c, &wireReq{Method: "GET", Target: target}, "")
			if r.Status >= 200 && r.Status < 300 {
				// Only a literal in-scope key may be read, and none of these exists.
				t.Errorf("GET %s: %s", target, r)
			}
			a.noLeak(t, "GET "+target, r.Body)
			pr := a.do(t, a.c, &wireReq{Method: "PUT", Target: target, Body: []byte("pwned")}, "")
			a.noLeak(t, "PUT "+target, pr.Body)
			dr := a.do(t, a.c, &wireReq{Method: "DELETE", Target: target}, "")
			a.noLeak(t, "DELETE "+target, dr.Body)
			t.Logf("GET %d %s, PUT %d %s, DELETE %d %s", r.Status, r.code(), pr.Status, pr.code(), dr.Status, dr.code())
			a.unchanged(t, target)
		})
	}
	// The copy source header takes the same tricks.
	for _, src := range []string{
		a.e.Bucket + "/" + a.Prefix + "../secret/s.bin",
		a.e.Bucket + "/" + a.Prefix + "%2e%2e/secret/s.bin",
		a.e.Bucket + "/" + a.Prefix + "..%2Fsecret%2Fs.bin",
		"/" + a.e.Bucket + "/" + a.Prefix + "../secret/s.bin",
		a.e.Bucket + "%2F" + a.Secret,
		a.e.Bucket + "/" + a.Secret + "?versionId=null",
	} {
		t.Run("copy-source "+src, func(t *testing.T) {
			dst := a.Prefix + "copied.bin"
			r := a.do(t, a.c, &wireReq{Method: "PUT", Target: a.path(dst), Header: [][2]string{{"X-Amz-Copy-Source", src}}}, "")
			a.expect(t, "CopyObject from "+src, r, s4xx)
			if got, _ := a.e.backendGet(t, dst); got != nil {
				t.Errorf("CopyObject from %s created %s", src, dst)
			}
			a.unchanged(t, src)
		})
	}
}

func TestAdversarialBucketConfusion(t *testing.T) {
	a := newAdv(t, "bucket")
	ctx := context.Background()
	root := a.e.backend()
	other := "dil-conf-" + strings.TrimSuffix(strings.TrimPrefix(a.Root, "it/adv-bucket-"), "/")
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &other}); err != nil {
		t.Fatalf("backend CreateBucket %s: %v", other, err)
	}
	// The other bucket holds, at the very key the credential may use in
	// lake, an object the credential must never see.
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: &other, Key: &a.Exist, Body: bytes.NewReader(a.SData)}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &other, Key: &a.Exist})
		root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &other})
	}()
	otherUnchanged := func(what string) {
		t.Helper()
		out, err := root.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &other})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != a.Exist {
			t.Errorf("%s: bucket %s changed", what, other)
		}
		got, err := root.GetObject(ctx, &s3.GetObjectInput{Bucket: &other, Key: &a.Exist})
		if err != nil {
			t.Fatal(err)
		}
		defer got.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(got.Body)
		if !bytes.Equal(buf.Bytes(), a.SData) {
			t.Errorf("%s: %s/%s changed", what, other, a.Exist)
		}
	}
	port := a.addr[strings.LastIndexByte(a.addr, ':'):]
	inLake := "/" + a.e.Bucket + "/" + a.Exist
	inOther := "/" + other + "/" + a.Exist
	cases := []struct {
		name, target, host string
		extra              [][2]string
	}{
		{"path names the other bucket, Host names lake", inOther, a.e.Bucket + ".localhost" + port, nil},
		{"path names lake, Host names the other bucket", inLake, other + ".localhost" + port, nil},
		{"virtual-hosted lake, key only", "/" + a.Exist, a.e.Bucket + ".localhost" + port, nil},
		{"virtual-hosted other bucket", "/" + a.Exist, other + ".localhost" + port, nil},
		{"X-Forwarded-Host names the other bucket", inLake, "", [][2]string{{"X-Forwarded-Host", other + ".localhost"}}},
		{"absolute-form target naming the other bucket", "http://" + other + ".localhost" + port + "/" + a.Exist, "", nil},
		{"absolute-form target with another path", "http://" + a.addr + inOther, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(t, a.c, &wireReq{Method: "GET", Target: tc.target, Host: tc.host, Header: slices.Clone(tc.extra)}, "")
			// Either refused, or lake's own object; never the other bucket's.
			if r.Status == 200 && !bytes.Equal(r.Body, a.Orig) {
				t.Errorf("GET: 200 with bytes that are not lake's object")
			}
			t.Logf("GET %d %s", r.Status, r.code())
			a.noLeak(t, "GET", r.Body)
			r = a.do(t, a.c, &wireReq{Method: "PUT", Target: tc.target, Host: tc.host, Header: slices.Clone(tc.extra), Body: a.Orig}, "")
			a.noLeak(t, "PUT", r.Body)
			t.Logf("PUT %d %s", r.Status, r.code())
			otherUnchanged(tc.name)
			a.unchanged(t, tc.name)
		})
	}
	// ListBuckets shows only the buckets the credential has grants in.
	out, err := a.client(a.c).ListBuckets(ctx, &s3.ListBucketsInput{})
	if err == nil {
		for _, bk := range out.Buckets {
			if aws.ToString(bk.Name) != a.e.Bucket {
				t.Errorf("ListBuckets shows %s, which the credential has no grant in", aws.ToString(bk.Name))
			}
		}
	} else if _, status := apiCode(err); status != http.StatusForbidden {
		t.Errorf("ListBuckets: %v", err)
	}
}

// crc32c is the base64 CRC32C of data, as the x-amz-checksum-crc32c header carries it.
func crc32c(data []byte) string {
	var b [4]byte
	v := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return base64.StdEncoding.EncodeToString(b[:])
}

// streamingPut builds a PUT of data to target as aws-chunked (mode is the
// x-amz-content-sha256 literal), signed with c; mutate may change the
// chunk signatures, trailer and body.
type streamOpts struct {
	corrupt        func(i int, sig string) string
	trailer        string // trailer line; "" = none (signed modes) / correct CRC32C
	corruptTrailer func(string) string
	decodedLength  int64 // 0 = len(data)
	send           int   // bytes of the wire body to send; 0 = all
}

func (a *adv) streamingPut(t *testing.T, c creds, target, mode string, data []byte, o streamOpts) wireResp {
	t.Helper()
	chunks := [][]byte{}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 64<<10)
		chunks = append(chunks, rest[:n])
		rest = rest[n:]
	}
	decoded := o.decodedLength
	if decoded == 0 {
		decoded = int64(len(data))
	}
	trailer := o.trailer
	withTrailer := strings.HasSuffix(mode, "-TRAILER")
	if withTrailer && trailer == "" {
		trailer = "x-amz-checksum-crc32c:" + crc32c(data)
	}
	w := &wireReq{Method: "PUT", Target: target, Header: [][2]string{
		{"Content-Encoding", "aws-chunked"},
		{"X-Amz-Decoded-Content-Length", fmt.Sprint(decoded)},
	}}
	if withTrailer {
		w.Header = append(w.Header, [2]string{"X-Amz-Trailer", "x-amz-checksum-crc32c"})
	}
	at := time.Now().UTC()
	// The body length must be known before signing (content-length is
	// signed) and the seed signature before building the body: build it
	// once with a dummy seed for its length (signatures are fixed-width).
	build := func(seed string) []byte {
		if mode == "STREAMING-UNSIGNED-PAYLOAD-TRAILER" {
			return unsignedChunkedBody(chunks, trailer)
		}
		s := newChunkSigner(c.SecretAccessKey, at.Format("20060102T150405Z"), a.e.Region, seed)
		if !withTrailer {
			return chunkedBody(s, chunks, o.corrupt, "", nil)
		}
		return chunkedBody(s, chunks, o.corrupt, trailer, o.corruptTrailer)
	}
	w.Body = build(strings.Repeat("0", 64))
	seed := a.sign(t, c, w, mode, at)
	w.Body = build(seed)
	w.Send = -1
	if o.send > 0 {
		w.Send = o.send
	}
	return send(t, a.addr, w)
}

func TestAdversarialStreamingPut(t *testing.T) {
	a := newAdv(t, "stream")
	data := randomBytes(t, 200<<10)
	const (
		signed        = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
		signedTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
		unsigned      = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	)
	bad := func(sig string) string { return strings.Repeat("0", len(sig)) }

	// Controls: each mode, done right, stores the bytes. They prove the
	// encoder, so every refusal below is for the one thing each case breaks.
	for _, mode := range []string{signed, signedTrailer, unsigned} {
		key := a.Prefix + "control-" + strings.ToLower(mode) + ".bin"
		r := a.streamingPut(t, a.c, a.path(key), mode, data, streamOpts{})
		if r.Status != 200 {
			t.Fatalf("control %s: %s", mode, r)
		}
		a.e.mustBackendEqual(t, key, data)
	}

	// badChunk corrupts the signature of chunk n alone.
	badChunk := func(n int) func(int, string) string {
		return func(i int, s string) string {
			if i == n {
				return bad(s)
			}
			return s
		}
	}
	cases := []struct {
		name     string
		mode     string
		o        streamOpts
		statuses []int
		codes    []string
	}{
		{"bad first chunk signature", signed, streamOpts{corrupt: badChunk(0)}, s403, []string{"SignatureDoesNotMatch"}},
		{"bad middle chunk signature", signed, streamOpts{corrupt: badChunk(2)}, s403, []string{"SignatureDoesNotMatch"}},
		{"bad final chunk signature", signed, streamOpts{corrupt: badChunk(4)}, s403, []string{"SignatureDoesNotMatch"}},
		{"bad final chunk signature, trailer mode", signedTrailer, streamOpts{corrupt: badChunk(4)}, s403, []string{"SignatureDoesNotMatch"}},
		{"bad trailer signature", signedTrailer, streamOpts{corruptTrailer: bad}, s403, []string{"SignatureDoesNotMatch"}},
		{"wrong trailing checksum, signed", signedTrailer, streamOpts{trailer: "x-amz-checksum-crc32c:AAAAAA=="}, s400, []string{"BadDigest", "InvalidRequest"}},
		{"wrong trailing checksum, unsigned", unsigned, streamOpts{trailer: "x-amz-checksum-crc32c:AAAAAA=="}, s400, []string{"BadDigest", "InvalidRequest"}},
		{"trailer other than announced", unsigned, streamOpts{trailer: "x-amz-checksum-crc32:" + base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 0})}, s400, nil},
		{"decoded length larger than sent", signed, streamOpts{decodedLength: int64(len(data)) + 10}, s4xx, nil},
		{"decoded length smaller than sent", signed, streamOpts{decodedLength: int64(len(data)) - 10}, s4xx, nil},
		{"truncated, signed", signed, streamOpts{send: 150 << 10}, append(slices.Clone(s4xx), 0), nil},
		{"truncated before the final chunk", signed, streamOpts{send: len(data) + 4*90}, append(slices.Clone(s4xx), 0), nil},
		{"truncated, signed trailer, before the trailer", signedTrailer, streamOpts{send: len(data) + 5*90}, append(slices.Clone(s4xx), 0), nil},
		{"truncated, unsigned trailer", unsigned, streamOpts{send: 100 << 10}, append(slices.Clone(s4xx), 0), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := a.Prefix + "fresh-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name) + ".bin"
			for _, key := range []string{a.Exist, fresh} {
				r := a.streamingPut(t, a.c, a.path(key), tc.mode, data, tc.o)
				if !slices.Contains(tc.statuses, r.Status) || (len(tc.codes) > 0 && !slices.Contains(tc.codes, r.code())) {
					t.Errorf("PUT %s: got %s; want status %v code %v", key, r, tc.statuses, tc.codes)
				} else {
					t.Logf("PUT %s: %d %s", key, r.Status, r.code())
				}
			}
			if got, ok := a.e.backendGet(t, fresh); ok {
				t.Errorf("the refused upload created %s (%d bytes)", fresh, len(got))
			}
			a.unchanged(t, tc.name)
		})
	}

	// Plain (not chunked) bodies.
	other := randomBytes(t, len(data))
	md5Of := func(b []byte) string { return base64.StdEncoding.EncodeToString(md5Sum(b)) }
	plain := []struct {
		name        string
		payloadHash string // "" = the body's
		header      [][2]string
		send        int
		statuses    []int
		codes       []string
	}{
		{"x-amz-content-sha256 of other bytes", sha256Hex(other), nil, -1, s400, []string{"XAmzContentSHA256Mismatch"}},
		{"Content-MD5 of other bytes", "", [][2]string{{"Content-MD5", md5Of(other)}}, -1, s400, []string{"BadDigest"}},
		{"x-amz-checksum-crc32c of other bytes", "", [][2]string{{"X-Amz-Checksum-Crc32c", crc32c(other)}}, -1, s400, []string{"BadDigest", "InvalidRequest"}},
		{"x-amz-checksum-crc32c of other bytes, unsigned payload", "UNSIGNED-PAYLOAD", [][2]string{{"X-Amz-Checksum-Crc32c", crc32c(other)}}, -1, s400, []string{"BadDigest", "InvalidRequest"}},
		{"truncated, sha256 payload", "", nil, 100 << 10, append(slices.Clone(s4xx), 0), nil},
		{"truncated, UNSIGNED-PAYLOAD", "UNSIGNED-PAYLOAD", nil, 100 << 10, append(slices.Clone(s4xx), 0), nil},
		{"truncated, UNSIGNED-PAYLOAD, one byte short", "UNSIGNED-PAYLOAD", nil, len(data) - 1, append(slices.Clone(s4xx), 0), nil},
	}
	for _, tc := range plain {
		t.Run(tc.name, func(t *testing.T) {
			fresh := a.Prefix + "fresh-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name) + ".bin"
			for _, key := range []string{a.Exist, fresh} {
				w := &wireReq{Method: "PUT", Target: a.path(key), Header: slices.Clone(tc.header), Body: data}
				a.sign(t, a.c, w, tc.payloadHash, time.Now().UTC())
				w.Send = tc.send
				r := send(t, a.addr, w)
				if !slices.Contains(tc.statuses, r.Status) || (len(tc.codes) > 0 && !slices.Contains(tc.codes, r.code())) {
					t.Errorf("PUT %s: got %s; want status %v code %v", key, r, tc.statuses, tc.codes)
				} else {
					t.Logf("PUT %s: %d %s", key, r.Status, r.code())
				}
			}
			// A truncated upload may surface upstream a moment after the
			// client is gone; give it that moment.
			time.Sleep(300 * time.Millisecond)
			if got, ok := a.e.backendGet(t, fresh); ok {
				t.Errorf("the refused upload created %s (%d bytes)", fresh, len(got))
			}
			a.unchanged(t, tc.name)
		})
	}
}

func TestAdversarialHTTP(t *testing.T) {
	a := newAdv(t, "http")
	fresh := func(name string) string { return a.Prefix + "fresh-" + name + ".bin" }
	notCreated := func(t *testing.T, key string) {
		t.Helper()
		time.Sleep(100 * time.Millisecond)
		if _, ok := a.e.backendGet(t, key); ok {
			t.Errorf("%s was created", key)
		}
		a.unchanged(t, key)
	}
	// unsignedHeader signs w, then adds h, which the signature does not
	// cover, and sends it.
	unsignedHeader := func(t *testing.T, w *wireReq, payloadHash string, h [2]string) wireResp {
		t.Helper()
		a.sign(t, a.c, w, payloadHash, time.Now().UTC())
		w.Header = append(w.Header, h)
		w.Send = -1
		return send(t, a.addr, w)
	}

	t.Run("oversized headers", func(t *testing.T) {
		key := fresh("big-header")
		w := &wireReq{Method: "PUT", Target: a.path(key), Body: []byte("x"),
			Header: [][2]string{{"X-Amz-Meta-Pad", strings.Repeat("a", 64<<10)}}}
		r := a.do(t, a.c, w, "")
		a.expect(t, "64 KiB header", r, []int{400, 431, 0})
		notCreated(t, key)
		w = &wireReq{Method: "GET", Target: a.path(a.Exist)}
		for i := range 2000 {
			w.Header = append(w.Header, [2]string{fmt.Sprintf("X-H%d", i), "v"})
		}
		r = a.do(t, a.c, w, "")
		a.expect(t, "2000 headers", r, []int{400, 431, 0})
	})

	t.Run("duplicate Authorization", func(t *testing.T) {
		for _, same := range []bool{true, false} {
			key := fresh(fmt.Sprintf("dup-auth-%v", same))
			w := &wireReq{Method: "PUT", Target: a.path(key), Body: []byte("dup")}
			a.sign(t, a.c, w, "", time.Now().UTC())
			var auth string
			for _, h := range w.Header {
				if h[0] == "Authorization" {
					auth = h[1]
				}
			}
			if !same {
				auth = auth[:len(auth)-64] + strings.Repeat("0", 64)
			}
			w.Header = append(w.Header, [2]string{"Authorization", auth})
			w.Send = -1
			r := send(t, a.addr, w)
			a.expect(t, "two Authorization headers", r, []int{400, 403})
			notCreated(t, key)
		}
	})

	t.Run("duplicate security token", func(t *testing.T) {
		key := fresh("dup-token")
		w := &wireReq{Method: "PUT", Target: a.path(key), Body: []byte("dup")}
		r := unsignedHeader(t, w, "", [2]string{"X-Amz-Security-Token", a.c.SessionToken})
		a.expect(t, "two X-Amz-Security-Token headers", r, []int{400, 403})
		notCreated(t, key)
	})

	t.Run("duplicate Host", func(t *testing.T) {
		key := fresh("dup-host")
		w := &wireReq{Method: "PUT", Target: a.path(key), Body: []byte("dup")}
		r := unsignedHeader(t, w, "", [2]string{"Host", "evil.example"})
		a.expect(t, "two Host headers", r, []int{400, 403})
		notCreated(t, key)
	})

	t.Run("Content-Length with Transfer-Encoding", func(t *testing.T) {
		key := fresh("cl-te")
		smuggled := "GET " + a.path(a.Secret) + " HTTP/1.1\r\nHost: " + a.addr + "\r\n\r\n"
		body := []byte("5\r\nhello\r\n0\r\n\r\n" + smuggled)
		w := &wireReq{Method: "PUT", Target: a.path(key), Body: body,
			Header: [][2]string{{"Content-Length", fmt.Sprint(len(body))}}}
		r := unsignedHeader(t, w, "UNSIGNED-PAYLOAD", [2]string{"Transfer-Encoding", "chunked"})
		a.expect(t, "Content-Length and Transfer-Encoding", r, []int{400, 0})
		notCreated(t, key)
	})

	t.Run("Transfer-Encoding other than chunked", func(t *testing.T) {
		key := fresh("te-gzip")
		w := &wireReq{Method: "PUT", Target: a.path(key), Body: []byte("hello")}
		r := unsignedHeader(t, w, "UNSIGNED-PAYLOAD", [2]string{"Transfer-Encoding", "gzip, chunked"})
		a.expect(t, "Transfer-Encoding: gzip, chunked", r, []int{400, 501, 0})
		notCreated(t, key)
	})
}

// TestListPrefixLeadingSlash: a list prefix only filters key names, so one
// that starts with '/' is listed like any other (issue 14 item 10): through
// the gateway the answer is the backend's, an empty listing where no key
// matches. The grant check still reads the prefix literally, so it reveals
// nothing outside a grant: "/" and "/<granted prefix>" are not inside a
// grant on "<granted prefix>", and are refused.
func TestListPrefixLeadingSlash(t *testing.T) {
	a := newAdv(t, "slash")
	ctx := context.Background()
	b := aws.String(a.e.Bucket)
	lister := a.client(a.e.mint(t, mintOpts{Principal: "adv-slash-lister", Grants: []string{a.e.Bucket + "::l"}, TTL: "1h"}))
	reader := a.client(a.e.mint(t, mintOpts{Principal: "adv-slash-reader", Grants: []string{a.e.Bucket + ":" + a.Prefix + ":r"}, TTL: "1h"}))
	keys := func(out *s3.ListObjectsV2Output) []string {
		var ks []string
		for _, o := range out.Contents {
			ks = append(ks, *o.Key)
		}
		return ks
	}
	for _, prefix := range []string{"/x", "/", "/" + a.Prefix, "/" + a.Exist} {
		in := &s3.ListObjectsV2Input{Bucket: b, Prefix: aws.String(prefix)}
		want, err := a.e.backend().ListObjectsV2(ctx, in)
		if err != nil {
			t.Fatalf("backend list %q: %v", prefix, err)
		}
		got, err := lister.ListObjectsV2(ctx, in)
		if err != nil {
			t.Fatalf("list %q through the gateway with a whole-bucket grant: %v", prefix, err)
		}
		if !slices.Equal(keys(got), keys(want)) || len(got.CommonPrefixes) != len(want.CommonPrefixes) {
			t.Errorf("list %q: gateway %q, backend %q", prefix, keys(got), keys(want))
		}
		if len(keys(got)) != 0 {
			t.Errorf("list %q: %q; no key the gateway accepts starts with '/'", prefix, keys(got))
		}
		if _, err := lister.ListObjects(ctx, &s3.ListObjectsInput{Bucket: b, Prefix: aws.String(prefix)}); err != nil {
			t.Errorf("ListObjects v1 %q: %v", prefix, err)
		}

		// The prefix "/<granted prefix>" is not inside the grant.
		_, err = reader.ListObjectsV2(ctx, in)
		if code, status := apiCode(err); code != "AccessDenied" || status != 403 {
			t.Errorf("list %q with a grant on %s: %v, want AccessDenied", prefix, a.Prefix, err)
		}
	}
	// Keys keep the strict rule.
	r := a.do(t, a.c, &wireReq{Method: "GET", Target: "/" + a.e.Bucket + "//" + a.Exist}, "")
	a.expect(t, "GET of a key with a leading '/'", r, s4xx, "InvalidArgument")
	a.unchanged(t, "leading-slash listings")
}
