package governance

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/s3proto"
)

func copySource(v ...string) s3proto.Headers { return s3proto.Headers{"x-amz-copy-source": v} }

var testClassifier = &s3proto.Classifier{VirtualHostSuffixes: [][]byte{[]byte("s3.localhost")}}

// panicking is an Authorizer that must not be asked.
type panicking struct{}

func (panicking) Authorize(context.Context, *Principal, Action, *Resource) (Decision, error) {
	panic("the Authorizer was asked about a request the scope check denies")
}

func (panicking) AuthorizeBatch(context.Context, *Principal, Action, []Resource, []Decision) error {
	panic("the Authorizer was asked about a request the scope check denies")
}

var testClaims = &creds.Claims{
	Principal: "alice",
	Actor:     creds.ActorHuman,
	Channel:   creds.ChannelREST,
	Grants: []creds.Grant{
		{Bucket: "lake", Prefix: "data/analytics/", Access: creds.Read | creds.Write | creds.List},
		{Bucket: "lake", Prefix: "data/public/", Access: creds.Read | creds.List},
		{Bucket: "lake", Prefix: "inbox/", Access: creds.Write},
		{Bucket: "lake", Prefix: "wild/*", Access: creds.Read | creds.List},
		{Bucket: "other", Prefix: "shared/", Access: creds.List},
		{Bucket: "whole", Prefix: "", Access: creds.Read | creds.List},
	},
}

type scopeCase struct {
	name       string
	method     string
	path       string
	query      string
	copySource string
	deleteKeys []string
	allow      bool
}

func TestS3Scope(t *testing.T) {
	cases := []scopeCase{
		// Reads.
		{name: "GetObject in grant", method: "GET", path: "/lake/data/analytics/a.parquet", allow: true},
		{name: "GetObject deep in grant", method: "GET", path: "/lake/data/analytics/y=2026/m=01/a.parquet", allow: true},
		{name: "GetObject sibling prefix", method: "GET", path: "/lake/data/analytics2/a.parquet"},
		{name: "GetObject prefix without slash", method: "GET", path: "/lake/data/analytics"},
		{name: "GetObject grant prefix itself", method: "GET", path: "/lake/data/analytics/", allow: true},
		{name: "GetObject outside", method: "GET", path: "/lake/secret/a"},
		{name: "GetObject other bucket same key", method: "GET", path: "/lake2/data/analytics/a"},
		{name: "GetObject write-only grant", method: "GET", path: "/lake/inbox/a"},
		{name: "GetObject read-only grant", method: "GET", path: "/lake/data/public/a", allow: true},
		{name: "GetObject list-only grant", method: "GET", path: "/other/shared/a"},
		{name: "GetObject whole-bucket grant", method: "GET", path: "/whole/any/key", allow: true},
		{name: "GetObject wildcard is literal", method: "GET", path: "/lake/wild/x"},
		{name: "GetObject literal star", method: "GET", path: "/lake/wild/%2Ax", allow: true},
		{name: "GetObject encoded escape to sibling", method: "GET", path: "/lake/data%2Fanalytics2%2Fa"},
		{name: "GetObject double-encoded stays literal", method: "GET", path: "/lake/data%252Fanalytics%252Fa"},
		{name: "GetObject unicode lookalike", method: "GET", path: "/lake/data/analytic%D1%95/a"},
		{name: "HeadObject in grant", method: "HEAD", path: "/lake/data/public/a", allow: true},
		{name: "HeadObject outside", method: "HEAD", path: "/lake/data/a"},
		{name: "GetObjectAttributes", method: "GET", path: "/lake/data/public/a", query: "attributes", allow: true},
		{name: "GetObjectAttributes write-only", method: "GET", path: "/lake/inbox/a", query: "attributes"},
		{name: "GetObjectTagging", method: "GET", path: "/lake/data/analytics/a", query: "tagging", allow: true},
		{name: "GetObjectTagging outside", method: "GET", path: "/lake/x/a", query: "tagging"},

		// Writes.
		{name: "PutObject in grant", method: "PUT", path: "/lake/data/analytics/a", allow: true},
		{name: "PutObject write-only grant", method: "PUT", path: "/lake/inbox/a", allow: true},
		{name: "PutObject read-only grant", method: "PUT", path: "/lake/data/public/a"},
		{name: "PutObject outside", method: "PUT", path: "/lake/data/a"},
		{name: "PutObject whole-bucket read grant", method: "PUT", path: "/whole/a"},
		{name: "PutObjectTagging", method: "PUT", path: "/lake/inbox/a", query: "tagging", allow: true},
		{name: "PutObjectTagging read-only", method: "PUT", path: "/lake/data/public/a", query: "tagging"},
		{name: "DeleteObjectTagging", method: "DELETE", path: "/lake/data/analytics/a", query: "tagging", allow: true},
		{name: "DeleteObjectTagging read-only", method: "DELETE", path: "/lake/data/public/a", query: "tagging"},
		{name: "DeleteObject", method: "DELETE", path: "/lake/data/analytics/a", allow: true},
		{name: "DeleteObject read-only", method: "DELETE", path: "/lake/data/public/a"},
		{name: "DeleteObject outside", method: "DELETE", path: "/lake/secret"},
		{name: "CreateMultipartUpload", method: "POST", path: "/lake/inbox/big", query: "uploads", allow: true},
		{name: "CreateMultipartUpload outside", method: "POST", path: "/lake/big", query: "uploads"},
		{name: "UploadPart", method: "PUT", path: "/lake/inbox/big", query: "partNumber=1&uploadId=u", allow: true},
		{name: "UploadPart outside", method: "PUT", path: "/lake/data/public/big", query: "partNumber=1&uploadId=u"},
		{name: "CompleteMultipartUpload", method: "POST", path: "/lake/inbox/big", query: "uploadId=u", allow: true},
		{name: "CompleteMultipartUpload outside", method: "POST", path: "/whole/big", query: "uploadId=u"},
		{name: "AbortMultipartUpload", method: "DELETE", path: "/lake/inbox/big", query: "uploadId=u", allow: true},
		{name: "AbortMultipartUpload outside", method: "DELETE", path: "/lake/secret/big", query: "uploadId=u"},
		{name: "ListParts writer", method: "GET", path: "/lake/inbox/big", query: "uploadId=u", allow: true},
		{name: "ListParts reader", method: "GET", path: "/lake/data/public/big", query: "uploadId=u"},

		// Copies: the destination needs Write, the source Read.
		{name: "CopyObject in scope", method: "PUT", path: "/lake/data/analytics/b", copySource: "lake/data/public/a", allow: true},
		{name: "CopyObject source from other bucket", method: "PUT", path: "/lake/data/analytics/b", copySource: "/whole/x/a?versionId=v", allow: true},
		{name: "CopyObject source outside", method: "PUT", path: "/lake/data/analytics/b", copySource: "lake/secret/a"},
		{name: "CopyObject source sibling prefix", method: "PUT", path: "/lake/data/analytics/b", copySource: "lake/data/analytics2/a"},
		{name: "CopyObject source write-only", method: "PUT", path: "/lake/data/analytics/b", copySource: "lake/inbox/a"},
		{name: "CopyObject source list-only", method: "PUT", path: "/lake/data/analytics/b", copySource: "other/shared/a"},
		{name: "CopyObject source same key other bucket", method: "PUT", path: "/lake/data/analytics/b", copySource: "evil/data/analytics/a"},
		{name: "CopyObject destination read-only", method: "PUT", path: "/lake/data/public/b", copySource: "lake/data/analytics/a"},
		{name: "CopyObject destination outside", method: "PUT", path: "/lake/b", copySource: "lake/data/analytics/a"},
		{name: "UploadPartCopy in scope", method: "PUT", path: "/lake/inbox/big", query: "partNumber=1&uploadId=u", copySource: "lake/data/public/a", allow: true},
		{name: "UploadPartCopy source outside", method: "PUT", path: "/lake/inbox/big", query: "partNumber=1&uploadId=u", copySource: "lake/secret/a"},
		{name: "UploadPartCopy destination outside", method: "PUT", path: "/lake/big", query: "partNumber=1&uploadId=u", copySource: "lake/data/public/a"},

		// DeleteObjects: every key needs Write.
		{name: "DeleteObjects all in scope", method: "POST", path: "/lake", query: "delete", deleteKeys: []string{"data/analytics/a", "inbox/b", "data/analytics/c/d"}, allow: true},
		{name: "DeleteObjects one outside", method: "POST", path: "/lake", query: "delete", deleteKeys: []string{"data/analytics/a", "secret/b", "data/analytics/c"}},
		{name: "DeleteObjects last outside", method: "POST", path: "/lake", query: "delete", deleteKeys: []string{"data/analytics/a", "data/analytics"}},
		{name: "DeleteObjects read-only key", method: "POST", path: "/lake", query: "delete", deleteKeys: []string{"data/analytics/a", "data/public/a"}},
		{name: "DeleteObjects no keys", method: "POST", path: "/lake", query: "delete"},
		{name: "DeleteObjects other bucket", method: "POST", path: "/whole", query: "delete", deleteKeys: []string{"a"}},

		// Lists: the prefix must lie inside a List grant.
		{name: "ListObjectsV2 grant prefix", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics%2F", allow: true},
		{name: "ListObjectsV2 deeper", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics%2Fy%3D2026%2F&delimiter=%2F", allow: true},
		{name: "ListObjectsV2 partial name inside", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics%2Fpart-", allow: true},
		{name: "ListObjectsV2 prefix without slash", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics"},
		{name: "ListObjectsV2 sibling", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics2%2F"},
		{name: "ListObjectsV2 parent", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2F&delimiter=%2F"},
		{name: "ListObjectsV2 no prefix", method: "GET", path: "/lake", query: "list-type=2"},
		{name: "ListObjectsV2 empty prefix", method: "GET", path: "/lake", query: "list-type=2&prefix="},
		{name: "ListObjectsV2 write-only", method: "GET", path: "/lake", query: "list-type=2&prefix=inbox%2F"},
		{name: "ListObjectsV2 list-only", method: "GET", path: "/other", query: "list-type=2&prefix=shared%2F", allow: true},
		{name: "ListObjectsV2 whole bucket", method: "GET", path: "/whole", query: "list-type=2", allow: true},
		{name: "ListObjectsV2 whole bucket prefix", method: "GET", path: "/whole", query: "list-type=2&prefix=x%2F", allow: true},
		{name: "ListObjectsV2 plus decodes to space", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics+%2F"},
		// A leading '/' is listed, but compared literally: "/data/…" is not
		// inside grant "data/…", and "/" is inside a whole-bucket grant only.
		{name: "ListObjectsV2 leading slash before a grant", method: "GET", path: "/lake", query: "list-type=2&prefix=%2Fdata%2Fanalytics%2F"},
		{name: "ListObjectsV2 slash", method: "GET", path: "/lake", query: "list-type=2&prefix=%2F"},
		{name: "ListObjectsV2 whole bucket slash", method: "GET", path: "/whole", query: "list-type=2&prefix=%2F", allow: true},
		{name: "ListObjectsV2 virtual-hosted", method: "GET", path: "/", query: "list-type=2&prefix=data%2Fpublic%2F", allow: true},
		{name: "ListObjects v1", method: "GET", path: "/lake", query: "prefix=data%2Fpublic%2F&marker=data%2F", allow: true},
		{name: "ListObjects v1 no prefix", method: "GET", path: "/lake"},
		{name: "ListObjectVersions", method: "GET", path: "/lake", query: "versions&prefix=data%2Fanalytics%2F", allow: true},
		{name: "ListObjectVersions outside", method: "GET", path: "/lake", query: "versions&prefix=data%2F"},
		{name: "ListMultipartUploads", method: "GET", path: "/lake", query: "uploads&prefix=data%2Fanalytics%2F", allow: true},
		{name: "ListMultipartUploads no prefix", method: "GET", path: "/lake", query: "uploads"},

		// Bucket-level.
		{name: "ListBuckets", method: "GET", path: "/", allow: true},
		{name: "HeadBucket granted", method: "HEAD", path: "/lake", allow: true},
		{name: "HeadBucket list-only", method: "HEAD", path: "/other", allow: true},
		{name: "HeadBucket ungranted", method: "HEAD", path: "/secret"},
		{name: "GetBucketLocation granted", method: "GET", path: "/whole", query: "location", allow: true},
		{name: "GetBucketLocation ungranted", method: "GET", path: "/secret", query: "location"},

		// Root only, even with a whole-bucket grant.
		{name: "CreateBucket", method: "PUT", path: "/whole"},
		{name: "DeleteBucket", method: "DELETE", path: "/whole"},
		{name: "PutBucketPolicy", method: "PUT", path: "/whole", query: "policy"},
		{name: "GetBucketAcl", method: "GET", path: "/whole", query: "acl"},
		{name: "PutBucketVersioning", method: "PUT", path: "/whole", query: "versioning"},
		{name: "unknown object subresource", method: "GET", path: "/whole/a", query: "acl"},
		{name: "unknown bucket subresource", method: "GET", path: "/whole", query: "session"},
		{name: "unknown method", method: "OPTIONS", path: "/whole/a"},
	}
	var r s3proto.Request
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := "127.0.0.1:9000"
			if tc.name == "ListObjectsV2 virtual-hosted" {
				host = "lake.s3.localhost"
			}
			hdr := s3proto.Headers{}
			if tc.copySource != "" {
				hdr = copySource(tc.copySource)
			}
			if err := testClassifier.Classify(&r, []byte(tc.method), []byte(host), []byte(tc.path), []byte(tc.query), hdr); err != nil {
				t.Fatalf("Classify: %v", err)
			}
			var keys [][]byte
			for _, k := range tc.deleteKeys {
				keys = append(keys, []byte(k))
			}
			reason := checkS3Scope(testClaims, &r, keys)
			if tc.allow {
				if reason != "" {
					t.Fatalf("%v %s/%s: denied: %s", r.Op, r.Bucket, r.Key, reason)
				}
				return
			}
			if reason == "" {
				t.Fatalf("%v %s/%s (src %s/%s, prefix %q): allowed", r.Op, r.Bucket, r.Key, r.CopySourceBucket, r.CopySourceKey, r.ListPrefix)
			}
			// Denied for the expected reason, which is a fixed text naming
			// no key: safe to send to the client.
			want := reasonKey
			switch {
			case r.Op.RootOnly():
				want = reasonRootOnly
			case r.Op == s3proto.OpDeleteObjects && len(keys) == 0:
				want = reasonUnclassified
			case r.Op == s3proto.OpDeleteObjects:
				want = reasonDeleteKey
			case r.Op.IsList():
				want = reasonListPrefix
			case r.Op == s3proto.OpHeadBucket || r.Op == s3proto.OpGetBucketLocation:
				want = reasonBucket
			case strings.Contains(tc.name, "source"):
				want = reasonCopySource
			}
			if reason != want {
				t.Errorf("denied %v because %q, want %q", r.Op, reason, want)
			}
			// AdmitS3 gives the same denial without asking the Authorizer.
			p := PrincipalOf(testClaims)
			d, err := AdmitS3(context.Background(), panicking{}, &p, testClaims, &r, keys, nil)
			if err != nil || d.Allow || d.Reason != want {
				t.Errorf("AdmitS3 = %+v, %v; want a denial because %q", d, err, want)
			}
		})
	}
}

// TestS3ScopeEveryOp makes sure no classified op slips through
// checkS3Scope without a rule: a credential without grants is denied every
// op but ListBuckets, and a hand-made Request missing its key is denied.
func TestS3ScopeEveryOp(t *testing.T) {
	none := &creds.Claims{}
	all := &creds.Claims{Grants: []creds.Grant{{Bucket: "lake", Access: creds.Read | creds.Write | creds.List}}}
	for op := s3proto.OpUnknown; op <= s3proto.NumOps; op++ {
		r := &s3proto.Request{Op: op, Bucket: []byte("lake"), Key: []byte("k"), CopySourceBucket: []byte("lake"), CopySourceKey: []byte("s")}
		if op.IsList() || !op.IsObject() {
			r.Key = nil
		}
		keys := [][]byte{[]byte("k")}
		if reason := checkS3Scope(none, r, keys); (reason == "") != (op == s3proto.OpListBuckets) {
			t.Errorf("%v with no grants: %q", op, reason)
		}
		reason := checkS3Scope(all, r, keys)
		if (reason == "") == op.RootOnly() {
			t.Errorf("%v with a whole-bucket grant: %q", op, reason)
		}
		if op.IsObject() {
			r.Key = nil
			if checkS3Scope(all, r, keys) == "" {
				t.Errorf("%v without a key allowed", op)
			}
		}
		if op.HasCopySource() {
			r.Key, r.CopySourceKey = []byte("k"), nil
			if checkS3Scope(all, r, keys) == "" {
				t.Errorf("%v without a copy source allowed", op)
			}
		}
		if op != s3proto.OpListBuckets && !op.RootOnly() {
			r.Bucket = nil
			if checkS3Scope(all, r, keys) == "" {
				t.Errorf("%v without a bucket allowed", op)
			}
		}
	}
}

// recordingAuthorizer records its calls ("Action bucket/key", a batch as
// one call with its keys joined by ',') and denies the call in deny.
type recordingAuthorizer struct {
	calls       []string
	deny        string
	err         error
	obligations []Obligation
}

func (a *recordingAuthorizer) decide(call string) (Decision, error) {
	if a.err != nil {
		return Decision{Allow: true}, a.err // an error denies even with Allow set
	}
	if call == a.deny {
		return Decision{Reason: "masked", PolicyIDs: []string{"p1"}}, nil
	}
	return Decision{Allow: true, Reason: "ok", Obligations: a.obligations}, nil
}

func (a *recordingAuthorizer) Authorize(_ context.Context, _ *Principal, act Action, r *Resource) (Decision, error) {
	call := act.String() + " " + string(r.Bucket) + "/" + string(r.Key)
	a.calls = append(a.calls, call)
	return a.decide(call)
}

func (a *recordingAuthorizer) AuthorizeBatch(_ context.Context, _ *Principal, act Action, rs []Resource, out []Decision) error {
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = string(r.Key)
		if string(r.Bucket) != string(rs[0].Bucket) {
			return errors.New("a batch spans buckets")
		}
	}
	a.calls = append(a.calls, act.String()+" "+string(rs[0].Bucket)+"/"+strings.Join(keys, ","))
	for i, r := range rs {
		d, err := a.decide(act.String() + " " + string(r.Bucket) + "/" + string(r.Key))
		if err != nil {
			return err
		}
		out[i] = d
	}
	return nil
}

func TestAdmitS3(t *testing.T) {
	p := PrincipalOf(testClaims)
	if p.ID != "alice" || p.Actor != creds.ActorHuman || p.Channel != creds.ChannelREST {
		t.Fatalf("PrincipalOf = %+v", p)
	}
	all := &creds.Claims{Principal: "alice", Grants: []creds.Grant{
		{Bucket: "lake", Access: creds.Read | creds.Write | creds.List},
		{Bucket: "src", Access: creds.Read}}}
	ctx := context.Background()
	classify := func(method, path, query, src string) *s3proto.Request {
		var r s3proto.Request
		hdr := s3proto.Headers{}
		if src != "" {
			hdr = copySource(src)
		}
		if err := testClassifier.Classify(&r, []byte(method), nil, []byte(path), []byte(query), hdr); err != nil {
			t.Fatal(err)
		}
		return &r
	}

	obliged := []Obligation{{Kind: ObligationServeMasked, Location: "s3://lake/data/__masked__/t/"}}
	cases := []struct {
		name        string
		r           *s3proto.Request
		keys        []string
		deny        string
		err         error
		obligations []Obligation
		calls       string
		allow       bool
		reason      string
	}{
		{name: "get", r: classify("GET", "/lake/a", "", ""), calls: "ReadObject lake/a", allow: true},
		{name: "head", r: classify("HEAD", "/lake/a", "", ""), calls: "ReadObject lake/a", allow: true},
		{name: "put", r: classify("PUT", "/lake/a", "", ""), calls: "WriteObject lake/a", allow: true},
		{name: "delete", r: classify("DELETE", "/lake/a", "", ""), calls: "DeleteObject lake/a", allow: true},
		{name: "list", r: classify("GET", "/lake", "list-type=2&prefix=p%2F", ""), calls: "ListObjects lake/p/", allow: true},
		{name: "head bucket", r: classify("HEAD", "/lake", "", ""), calls: "ReadBucket lake/", allow: true},
		{name: "list buckets", r: classify("GET", "/", "", ""), calls: "ListBuckets /", allow: true},
		{name: "copy", r: classify("PUT", "/lake/b", "", "src/a"), calls: "WriteObject lake/b|ReadObject src/a", allow: true},
		{name: "copy source denied", r: classify("PUT", "/lake/b", "", "src/a"), deny: "ReadObject src/a", calls: "WriteObject lake/b|ReadObject src/a", reason: "masked"},
		{name: "copy destination denied", r: classify("PUT", "/lake/b", "", "src/a"), deny: "WriteObject lake/b", calls: "WriteObject lake/b", reason: "masked"},
		{name: "upload part copy", r: classify("PUT", "/lake/b", "partNumber=1&uploadId=u", "src/a"), calls: "WriteObject lake/b|ReadObject src/a", allow: true},
		{name: "delete objects: one batch", r: classify("POST", "/lake", "delete", ""), keys: []string{"a", "b"}, calls: "DeleteObject lake/a,b", allow: true},
		{name: "delete objects one denied", r: classify("POST", "/lake", "delete", ""), keys: []string{"a", "b", "c"}, deny: "DeleteObject lake/b", calls: "DeleteObject lake/a,b,c", reason: "masked"},
		{name: "delete objects no keys", r: classify("POST", "/lake", "delete", ""), reason: reasonUnclassified},
		{name: "scope denies first", r: classify("GET", "/secret/a", "", ""), reason: reasonKey},
		{name: "error fails closed", r: classify("GET", "/lake/a", "", ""), err: errors.New("governance down"), calls: "ReadObject lake/a", reason: reasonAuthzFailed},
		{name: "error on copy source fails closed", r: classify("PUT", "/lake/b", "", "src/a"), err: errors.New("x"), calls: "WriteObject lake/b", reason: reasonAuthzFailed},
		{name: "error in a batch fails closed", r: classify("POST", "/lake", "delete", ""), keys: []string{"a"}, err: errors.New("x"), calls: "DeleteObject lake/a", reason: reasonAuthzFailed},
		{name: "an obligation the S3 path cannot honour denies", r: classify("GET", "/lake/a", "", ""), obligations: obliged, calls: "ReadObject lake/a", reason: reasonObligation},
		{name: "so does one in a batch", r: classify("POST", "/lake", "delete", ""), keys: []string{"a"}, obligations: obliged, calls: "DeleteObject lake/a", reason: reasonObligation},
	}
	var buf S3Buffers
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &recordingAuthorizer{deny: tc.deny, err: tc.err, obligations: tc.obligations}
			var keys [][]byte
			for _, k := range tc.keys {
				keys = append(keys, []byte(k))
			}
			d, err := AdmitS3(ctx, a, &p, all, tc.r, keys, &buf)
			if d.Allow != tc.allow || !tc.allow && d.Reason != tc.reason {
				t.Errorf("AdmitS3 = %+v, want allow %v, reason %q", d, tc.allow, tc.reason)
			}
			if (err != nil) != (tc.err != nil) {
				t.Errorf("err = %v", err)
			}
			if tc.err != nil && strings.Contains(d.Reason, tc.err.Error()) {
				t.Errorf("reason %q leaks the error", d.Reason)
			}
			if tc.deny != "" && len(d.PolicyIDs) != 1 {
				t.Errorf("the denial's policy ids are lost: %+v", d)
			}
			if got := strings.Join(a.calls, "|"); got != tc.calls {
				t.Errorf("calls %q, want %q", got, tc.calls)
			}
			if buf.one.Bucket != nil || len(buf.batch) != 0 || len(buf.decisions) != 0 {
				t.Errorf("the buffers keep the request's slices: %+v", buf)
			}
		})
	}
}

func TestAdmitS3Bucket(t *testing.T) {
	if d := AdmitS3Bucket(testClaims, []byte("other")); !d.Allow {
		t.Errorf("a list-only grant names the bucket: %+v", d)
	}
	if d := AdmitS3Bucket(testClaims, []byte("secret")); d.Allow || d.Reason != reasonBucket {
		t.Errorf("an ungranted bucket: %+v", d)
	}
	if GrantsBucket(&creds.Claims{Grants: []creds.Grant{{Bucket: "lake"}}}, []byte("lake")) {
		t.Error("a grant without access names its bucket")
	}
}

func TestActionOf(t *testing.T) {
	want := map[s3proto.Op]Action{
		s3proto.OpListBuckets:             ActionListBuckets,
		s3proto.OpHeadBucket:              ActionReadBucket,
		s3proto.OpGetBucketLocation:       ActionReadBucket,
		s3proto.OpListObjectsV2:           ActionListObjects,
		s3proto.OpListObjects:             ActionListObjects,
		s3proto.OpListObjectVersions:      ActionListObjects,
		s3proto.OpListMultipartUploads:    ActionListObjects,
		s3proto.OpGetObject:               ActionReadObject,
		s3proto.OpHeadObject:              ActionReadObject,
		s3proto.OpGetObjectAttributes:     ActionReadObject,
		s3proto.OpGetObjectTagging:        ActionReadObject,
		s3proto.OpPutObject:               ActionWriteObject,
		s3proto.OpCopyObject:              ActionWriteObject,
		s3proto.OpPutObjectTagging:        ActionWriteObject,
		s3proto.OpDeleteObjectTagging:     ActionWriteObject,
		s3proto.OpDeleteObject:            ActionDeleteObject,
		s3proto.OpDeleteObjects:           ActionDeleteObject,
		s3proto.OpCreateMultipartUpload:   ActionWriteObject,
		s3proto.OpUploadPart:              ActionWriteObject,
		s3proto.OpUploadPartCopy:          ActionWriteObject,
		s3proto.OpCompleteMultipartUpload: ActionWriteObject,
		s3proto.OpAbortMultipartUpload:    ActionWriteObject,
		s3proto.OpListParts:               ActionWriteObject,
	}
	for op := s3proto.OpUnknown; op <= s3proto.NumOps; op++ {
		got := ActionOf(op)
		if w, ok := want[op]; ok != !op.RootOnly() || got != w {
			t.Errorf("ActionOf(%v) = %v, want %v", op, got, w)
		}
		if got != ActionUnknown && (!got.IsS3() || got.IsWrite() != (op.Access() == creds.Write)) {
			t.Errorf("ActionOf(%v) = %v: not an S3 action of the op's kind", op, got)
		}
	}
}

// TestAdmitS3AllocatesNothing: with the buffers of a pooled request state,
// admission costs no allocation, DeleteObjects' batch included.
func TestAdmitS3AllocatesNothing(t *testing.T) {
	ctx := context.Background()
	p := PrincipalOf(testClaims)
	var get, del s3proto.Request
	if err := testClassifier.Classify(&get, []byte("GET"), nil, []byte("/lake/data/analytics/a"), nil, s3proto.Headers{}); err != nil {
		t.Fatal(err)
	}
	if err := testClassifier.Classify(&del, []byte("POST"), nil, []byte("/lake"), []byte("delete"), s3proto.Headers{}); err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, s3proto.MaxDeleteObjects)
	for i := range keys {
		keys[i] = []byte("data/analytics/k")
	}
	var buf S3Buffers
	var az Authorizer = ScopeOnly{}
	run := func() {
		if d, err := AdmitS3(ctx, az, &p, testClaims, &get, nil, &buf); err != nil || !d.Allow {
			t.Fatalf("get: %+v %v", d, err)
		}
		if d, err := AdmitS3(ctx, az, &p, testClaims, &del, keys, &buf); err != nil || !d.Allow {
			t.Fatalf("delete: %+v %v", d, err)
		}
	}
	run() // grow the buffers
	if n := testing.AllocsPerRun(50, run); n != 0 {
		t.Errorf("AdmitS3 allocates %.1f times per request", n)
	}
}

func BenchmarkAdmitS3Get(b *testing.B) {
	ctx := context.Background()
	p := PrincipalOf(testClaims)
	var r s3proto.Request
	if err := testClassifier.Classify(&r, []byte("GET"), nil, []byte("/lake/data/analytics/y=2026/part-00001.parquet"), nil, s3proto.Headers{}); err != nil {
		b.Fatal(err)
	}
	var buf S3Buffers
	var az Authorizer = ScopeOnly{}
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := AdmitS3(ctx, az, &p, testClaims, &r, nil, &buf); !d.Allow {
			b.Fatal(d.Reason)
		}
	}
}
