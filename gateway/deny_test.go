package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/testsupport/s3test"
)

// TestScopeDenials: every operation on a key outside the credential's grants
// is AccessDenied, and the backend is left exactly as it was.
func TestScopeDenials(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	other := e.bucket()
	e.putDirect(b, "secret/s.txt", "secret")
	e.putDirect(b, "data/d.txt", "data")
	e.putDirect(other, "data/o.txt", "other bucket")
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()

	cases := []struct {
		name string
		do   func() error
	}{
		{"get outside prefix", func() error {
			return s3test.Err(c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("secret/s.txt")}))
		}},
		{"get other bucket", func() error {
			return s3test.Err(c.GetObject(ctx, &s3.GetObjectInput{Bucket: &other, Key: aws.String("data/o.txt")}))
		}},
		{"head outside prefix", func() error {
			return s3test.Err(c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b, Key: aws.String("secret/s.txt")}))
		}},
		{"put outside prefix", func() error {
			return s3test.Err(c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("secret/s.txt"), Body: strings.NewReader("overwritten")}))
		}},
		{"put prefix look-alike", func() error {
			return s3test.Err(c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data2/x"), Body: strings.NewReader("x")}))
		}},
		{"delete outside prefix", func() error {
			return s3test.Err(c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("secret/s.txt")}))
		}},
		{"copy from outside prefix", func() error {
			return s3test.Err(c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("data/stolen.txt"),
				CopySource: aws.String(b + "/secret/s.txt")}))
		}},
		{"copy from other bucket", func() error {
			return s3test.Err(c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("data/stolen.txt"),
				CopySource: aws.String(other + "/data/o.txt")}))
		}},
		{"copy to outside prefix", func() error {
			return s3test.Err(c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("secret/s.txt"),
				CopySource: aws.String(b + "/data/d.txt")}))
		}},
		{"delete objects with one key outside", func() error {
			return s3test.Err(c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
				{Key: aws.String("data/d.txt")}, {Key: aws.String("secret/s.txt")}}}}))
		}},
		{"list without prefix", func() error { return s3test.Err(c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b})) }},
		{"list prefix outside grant", func() error {
			return s3test.Err(c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("secret/")}))
		}},
		{"list prefix shorter than grant", func() error {
			return s3test.Err(c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("dat")}))
		}},
		{"list v1 outside grant", func() error {
			return s3test.Err(c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: &b, Prefix: aws.String("secret/")}))
		}},
		{"create bucket (root only)", func() error {
			return s3test.Err(c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("gw-not-allowed")}))
		}},
		{"delete bucket (root only)", func() error { return s3test.Err(c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &other})) }},
		{"bucket policy (root only)", func() error { return s3test.Err(c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &b})) }},
		{"multipart outside prefix", func() error {
			return s3test.Err(c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("secret/mp")}))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if code := errorCode(err); code != "AccessDenied" && !(strings.HasPrefix(tc.name, "head") && code == "Forbidden") {
				t.Fatalf("error %q (%v), want AccessDenied", code, err)
			}
			if st := httpStatus(err); st != 403 {
				t.Fatalf("status %d, want 403", st)
			}
		})
	}

	// Nothing changed on the backend.
	for key, want := range map[string]string{"secret/s.txt": "secret", "data/d.txt": "data"} {
		if got, ok := e.getDirect(b, key); !ok || got != want {
			t.Errorf("%s on the backend: %q (exists %v), want %q", key, got, ok, want)
		}
	}
	for _, key := range []string{"data/stolen.txt", "data2/x", "secret/mp"} {
		if _, ok := e.getDirect(b, key); ok {
			t.Errorf("%s exists on the backend", key)
		}
	}
	ups, err := e.direct.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &b})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("multipart uploads on the backend: %v %v", err, ups.Uploads)
	}
	if _, err := e.direct.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &other}); err != nil {
		t.Errorf("bucket %s is gone: %v", other, err)
	}
	// Every denial has a line (the direct checks above are not audited).
	log := e.auditLog(len(cases))
	if n := strings.Count(log, `"decision":"deny"`); n != len(cases) {
		t.Errorf("%d deny lines in the audit log, want %d", n, len(cases))
	}
}

// TestCredentialFailures: the credential itself is refused with the S3 code
// S3 would give, before anything reaches the backend.
func TestCredentialFailures(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/x", "x")
	ctx := context.Background()
	good := e.mint(time.Hour, b+":data/:rw")

	past := time.Now().Add(-2 * time.Hour)
	e.keyring.Now = func() time.Time { return past }
	expired := e.mint(time.Hour, b+":data/:rw")
	e.keyring.Now = nil

	revoked := e.mint(time.Hour, b+":data/:rw")
	e.revoked.Revoke(revoked.VendID, revoked.Expiry)

	tampered := []byte(good.SessionToken)
	tampered[len(tampered)/2] ^= 1
	if tampered[len(tampered)/2] == '_' || tampered[len(tampered)/2] == '-' {
		tampered[len(tampered)/2] = 'A'
	}

	other := e.mint(time.Hour, b+":data/:rw")

	cases := []struct {
		name, key, secret, token string
		want                     string
	}{
		{"expired token", expired.AccessKeyID, expired.SecretAccessKey, expired.SessionToken, "ExpiredToken"},
		{"tampered token", good.AccessKeyID, good.SecretAccessKey, string(tampered), "InvalidToken"},
		{"revoked token", revoked.AccessKeyID, revoked.SecretAccessKey, revoked.SessionToken, "InvalidToken"},
		{"token of another credential", good.AccessKeyID, good.SecretAccessKey, other.SessionToken, "InvalidAccessKeyId"},
		{"wrong secret", good.AccessKeyID, other.SecretAccessKey, good.SessionToken, "SignatureDoesNotMatch"},
		{"no session token", good.AccessKeyID, good.SecretAccessKey, "", "InvalidAccessKeyId"},
		{"unknown key", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", "InvalidAccessKeyId"},
		{"root with a token", gwRootKey, gwRootSecret, good.SessionToken, "InvalidToken"},
		{"root with wrong secret", gwRootKey, "not-the-root-secret-0123456789abcdef", "", "SignatureDoesNotMatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := s3test.Client(e.endpoint, "", tc.key, tc.secret, tc.token)
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/x"), Body: strings.NewReader("overwritten")})
			if code := errorCode(err); code != tc.want {
				t.Fatalf("put: %q (%v), want %s", code, err, tc.want)
			}
			_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/x")})
			if code := errorCode(err); code != tc.want {
				t.Fatalf("get: %q (%v), want %s", code, err, tc.want)
			}
		})
	}
	if got, _ := e.getDirect(b, "data/x"); got != "x" {
		t.Fatalf("backend object changed to %q", got)
	}
	log := e.auditLog(2 * len(cases))
	for _, secret := range []string{good.SessionToken, good.SecretAccessKey, expired.SessionToken, gwRootSecret, string(tampered)} {
		if strings.Contains(log, secret) {
			t.Fatal("the audit log contains a secret or token")
		}
	}
	if strings.Contains(log, "Signature=") || strings.Contains(log, "Credential=") {
		t.Fatal("the audit log contains an Authorization header")
	}
}

func TestRootPassesEverything(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.rootClient()
	name := "gwroot-" + time.Now().Format("150405.000000")
	name = strings.ReplaceAll(name, ".", "-")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("root create bucket: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &name, Key: aws.String("any/key"), Body: strings.NewReader("r")}); err != nil {
		t.Fatalf("root put: %v", err)
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &name})
	if err != nil || len(out.Contents) != 1 {
		t.Fatalf("root list: %v", err)
	}
	if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &name, Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("any/key")}}}}); err != nil {
		t.Fatalf("root delete objects: %v", err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("root delete bucket: %v", err)
	}
}

func TestDeleteObjectsInScope(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/a", "a")
	e.putDirect(b, "data/b", "b")
	c, _ := e.client(b + ":data/:rw")
	out, err := c.DeleteObjects(context.Background(), &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("data/a")}, {Key: aws.String("data/b")}}}})
	if err != nil {
		t.Fatalf("delete objects: %v", err)
	}
	if len(out.Deleted) != 2 {
		t.Fatalf("deleted %d, want 2 (errors %v)", len(out.Deleted), out.Errors)
	}
	for _, k := range []string{"data/a", "data/b"} {
		if _, ok := e.getDirect(b, k); ok {
			t.Errorf("%s still exists", k)
		}
	}
}

// TestListBucketsFiltered: a minted credential sees only the buckets its
// grants name.
func TestListBucketsFiltered(t *testing.T) {
	e := newEnv(t)
	b1, b2 := e.bucket(), e.bucket()
	c, _ := e.client(b1 + ":data/:r")
	out, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatalf("list buckets: %v", err)
	}
	var names []string
	for _, bk := range out.Buckets {
		names = append(names, aws.ToString(bk.Name))
	}
	if len(names) != 1 || names[0] != b1 {
		t.Fatalf("buckets %v, want only %s (not %s)", names, b1, b2)
	}
	all, err := e.rootClient().ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil || len(all.Buckets) < 2 {
		t.Fatalf("root list buckets: %v, %d buckets", err, len(all.Buckets))
	}
}

func TestReadOnlyGrant(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/r", "read me")
	c, _ := e.client(b + ":data/:r")
	ctx := context.Background()
	if _, got := getBody(t, c, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/r")}); got != "read me" {
		t.Fatalf("got %q", got)
	}
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b, Key: aws.String("data/r"), Body: strings.NewReader("no")})
	if errorCode(err) != "AccessDenied" {
		t.Fatalf("put with a read grant: %v", err)
	}
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("data/r")})
	if errorCode(err) != "AccessDenied" {
		t.Fatalf("delete with a read grant: %v", err)
	}
	if got, _ := e.getDirect(b, "data/r"); got != "read me" {
		t.Fatalf("backend object is %q", got)
	}
}

// denyAuthorizer refuses keys under "masked/" and fails on "broken/".
type denyAuthorizer struct{}

func (denyAuthorizer) Authorize(_ context.Context, _ *governance.Principal, _ governance.Action, r *governance.Resource) (governance.Decision, error) {
	switch {
	case strings.HasPrefix(string(r.Key), "data/masked/"):
		return governance.Decision{Reason: "base files of a masked table", PolicyIDs: []string{"pol-7"}}, nil
	case strings.HasPrefix(string(r.Key), "data/broken/"):
		return governance.Decision{}, errors.New("governance store unreachable")
	}
	return governance.Decision{Allow: true, Reason: "ok", PolicyIDs: []string{"pol-1"}}, nil
}

func (a denyAuthorizer) AuthorizeBatch(ctx context.Context, p *governance.Principal, act governance.Action, rs []governance.Resource, out []governance.Decision) error {
	return governance.AuthorizeEach(ctx, a, p, act, rs, out)
}

// TestAuthorizer: after the scope check the Authorizer decides; a denial or
// an error is AccessDenied and audited with the policy ids.
func TestAuthorizer(t *testing.T) {
	e := newEnv(t, func(_ *Config, d *Deps) { d.Authorizer = denyAuthorizer{} })
	b := e.bucket()
	e.putDirect(b, "data/masked/t.parquet", "base")
	e.putDirect(b, "data/open/t.parquet", "open")
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/open/t.parquet")}); err != nil {
		t.Fatalf("allowed get: %v", err)
	}
	for _, key := range []string{"data/masked/t.parquet", "data/broken/t.parquet"} {
		_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String(key)})
		if errorCode(err) != "AccessDenied" {
			t.Fatalf("get %s: %v", key, err)
		}
	}
	// Copying a denied source and deleting a denied key in a batch are
	// refused too.
	_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("data/open/copy"),
		CopySource: aws.String(b + "/data/masked/t.parquet")})
	if errorCode(err) != "AccessDenied" {
		t.Fatalf("copy of a denied source: %v", err)
	}
	_, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("data/open/t.parquet")}, {Key: aws.String("data/masked/t.parquet")}}}})
	if errorCode(err) != "AccessDenied" {
		t.Fatalf("batch delete with a denied key: %v", err)
	}
	for _, k := range []string{"data/masked/t.parquet", "data/open/t.parquet"} {
		if _, ok := e.getDirect(b, k); !ok {
			t.Fatalf("%s was deleted", k)
		}
	}
	log := e.auditLog(5)
	for _, want := range []string{`"reason":"base files of a masked table","policies":["pol-7"]`, `"reason":"authorizer error"`, `"policies":["pol-1"]`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit lacks %s", want)
		}
	}
	if strings.Contains(log, "governance store unreachable") {
		t.Error("the authorizer's error text reached the audit line meant for clients")
	}
}

// TestUploadPartCopyScope: UploadPartCopy's source is checked like
// CopyObject's.
func TestUploadPartCopyScope(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "secret/src", strings.Repeat("s", 1024))
	e.putDirect(b, "data/src", strings.Repeat("d", 1024))
	c, _ := e.client(b + ":data/:rw")
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("data/mp")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &b, Key: aws.String("data/mp"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String(b + "/secret/src")})
	if errorCode(err) != "AccessDenied" {
		t.Fatalf("part copy from outside the grant: %v", err)
	}
	if _, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &b, Key: aws.String("data/mp"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String(b + "/data/src")}); err != nil {
		t.Fatalf("part copy in scope: %v", err)
	}
	parts, err := e.direct.ListParts(ctx, &s3.ListPartsInput{Bucket: &b, Key: aws.String("data/mp"), UploadId: up.UploadId})
	if err != nil || len(parts.Parts) != 1 {
		t.Fatalf("backend parts: %v %d", err, len(parts.Parts))
	}
}

// TestRevokedAfterUse: revoking a credential that has been working takes
// effect on its next request.
func TestRevokedAfterUse(t *testing.T) {
	e := newEnv(t)
	b := e.bucket()
	e.putDirect(b, "data/x", "x")
	c, m := e.client(b + ":data/:r")
	ctx := context.Background()
	for range 2 {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/x")})
		if err != nil {
			t.Fatal(err)
		}
		out.Body.Close()
	}
	e.revoked.Revoke(m.VendID, m.Expiry)
	_, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b, Key: aws.String("data/x")})
	if errorCode(err) != "InvalidToken" {
		t.Fatalf("after revocation: %v", err)
	}
}
