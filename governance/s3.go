package governance

import (
	"context"

	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// ActionOf is the action an S3 operation performs on what it names: its
// object key, its list prefix, its bucket. Root-only operations (bucket
// administration, and every request the classifier could not name) have no
// action: ActionUnknown, which AdmitS3 never asks about.
func ActionOf(op s3proto.Op) Action {
	switch op {
	case s3proto.OpListBuckets:
		return ActionListBuckets
	case s3proto.OpHeadBucket, s3proto.OpGetBucketLocation:
		return ActionReadBucket
	case s3proto.OpDeleteObject, s3proto.OpDeleteObjects:
		return ActionDeleteObject
	}
	switch {
	case op.RootOnly():
		return ActionUnknown
	case op.IsList():
		return ActionListObjects
	case op.Access() == creds.Read:
		return ActionReadObject
	case op.Access() == creds.Write:
		return ActionWriteObject
	}
	return ActionUnknown
}

// Reasons AdmitS3 gives. They name no key, so they are safe both in the
// client's error message and in the audit trail.
const (
	reasonRootOnly     = "the operation is reserved to the operator"
	reasonKey          = "the object key is outside the credential's scope"
	reasonCopySource   = "the copy source is outside the credential's scope"
	reasonDeleteKey    = "a key of the DeleteObjects body is outside the credential's scope"
	reasonListPrefix   = "the list prefix is outside the credential's scope"
	reasonBucket       = "the bucket is outside the credential's scope"
	reasonUnclassified = "the request names no key to check"
	reasonNoKeys       = "no keys to authorise"
	reasonAuthzFailed  = "authorisation failed"
	reasonObligation   = "the decision carries an obligation the S3 path cannot honour"
)

// S3Buffers are the buffers AdmitS3 works in: the Resource of each
// Authorizer call and a DeleteObjects body's resources and decisions. A
// request state that keeps one and passes it to every AdmitS3 makes
// admission allocate nothing once the buffers have grown. The zero value
// is ready for use.
type S3Buffers struct {
	one       Resource
	batch     []Resource
	decisions []Decision
}

// Reset drops the references the buffers hold into the last request,
// keeping their capacity.
func (b *S3Buffers) Reset() {
	b.one = Resource{}
	clear(b.batch)
	clear(b.decisions)
	b.batch, b.decisions = b.batch[:0], b.decisions[:0]
}

// AdmitS3 is the one admission pipeline for an S3 request made with a
// minted credential (the gateway) or signed for one (the remote signer):
// after the classifier has named every key the request touches, it checks
// c's grants against each (see checkS3Scope), then asks az about each:
//
//   - the object key, with ActionOf(r.Op);
//   - a copy source (CopyObject, UploadPartCopy) as ActionReadObject;
//   - the keys of a DeleteObjects body (deleteKeys, from
//     s3proto.ParseDeleteObjects) as ActionDeleteObject, in one
//     AuthorizeBatch call;
//   - a list prefix as ActionListObjects, a bucket operation's bucket as
//     ActionReadBucket, ListBuckets as ActionListBuckets.
//
// It returns the first denial (a scope denial's reason is one of the fixed
// texts above), else the last allowing decision. An allowing decision with
// obligations denies: the S3 path cannot serve a masked copy yet. An error
// from az denies with a generic reason and is returned for the caller to
// log; its text must not reach the client. Operator root credentials do not
// come here.
//
// buf may be nil; a caller on a hot path passes one it reuses.
func AdmitS3(ctx context.Context, az Authorizer, p *Principal, c *creds.Claims, r *s3proto.Request, deleteKeys [][]byte, buf *S3Buffers) (Decision, error) {
	if reason := checkS3Scope(c, r, deleteKeys); reason != "" {
		return Denied(reason), nil
	}
	a := ActionOf(r.Op)
	if p.IsAgent() && a.IsWrite() {
		// Before the Authorizer: a credential whose actor is agent writes
		// nothing, whatever its grants say and whoever decides after.
		return Denied(ReasonAgentReadOnly), nil
	}
	if buf == nil {
		buf = new(S3Buffers)
	}
	var d Decision
	var err error
	switch {
	case r.Op == s3proto.OpDeleteObjects:
		return admitBatch(ctx, az, p, r.Bucket, deleteKeys, buf)
	case r.Op.IsList():
		d, err = authorize(ctx, az, p, a, r.Bucket, r.ListPrefix, buf)
	case r.Op.IsObject():
		d, err = authorize(ctx, az, p, a, r.Bucket, r.Key, buf)
	default:
		d, err = authorize(ctx, az, p, a, r.Bucket, nil, buf)
	}
	if err != nil || !d.Allow || !r.Op.HasCopySource() {
		return d, err
	}
	return authorize(ctx, az, p, ActionReadObject, r.CopySourceBucket, r.CopySourceKey, buf)
}

// authorize asks az about one object, in buf's Resource: a Resource on the
// stack would escape through the interface call.
func authorize(ctx context.Context, az Authorizer, p *Principal, a Action, bucket, key []byte, buf *S3Buffers) (Decision, error) {
	buf.one = ObjectResource(bucket, key)
	d, err := az.Authorize(ctx, p, a, &buf.one)
	buf.one = Resource{}
	if err != nil {
		return Denied(reasonAuthzFailed), err
	}
	return honourable(d), nil
}

// admitBatch asks az about every key of a DeleteObjects body at once.
func admitBatch(ctx context.Context, az Authorizer, p *Principal, bucket []byte, keys [][]byte, buf *S3Buffers) (Decision, error) {
	if len(keys) == 0 {
		return Denied(reasonNoKeys), nil
	}
	rs := buf.batch[:0]
	for _, k := range keys {
		rs = append(rs, ObjectResource(bucket, k))
	}
	buf.batch = rs
	out := buf.decisions[:0]
	for range keys {
		out = append(out, Decision{})
	}
	buf.decisions = out
	defer buf.Reset()
	if err := az.AuthorizeBatch(ctx, p, ActionDeleteObject, rs, out); err != nil {
		return Denied(reasonAuthzFailed), err
	}
	for i := range out {
		if d := honourable(out[i]); !d.Allow {
			return d, nil
		}
	}
	return out[len(out)-1], nil
}

// honourable is d, or a denial when d allows on a condition the S3 path
// cannot meet.
func honourable(d Decision) Decision {
	if d.Allow && len(d.Obligations) > 0 {
		return Decision{Reason: reasonObligation, PolicyIDs: d.PolicyIDs}
	}
	return d
}

// AdmitS3Bucket is what AdmitS3 can decide of a DeleteObjects before its
// body has arrived: that some grant of c gives access to the bucket, so a
// request no key of which could be in scope is refused before the client
// uploads its body.
func AdmitS3Bucket(c *creds.Claims, bucket []byte) Decision {
	if !GrantsBucket(c, bucket) {
		return Denied(reasonBucket)
	}
	return Allowed("")
}

// GrantsBucket reports whether some grant of c gives any access in bucket:
// the rule for HeadBucket, GetBucketLocation, and which buckets ListBuckets
// shows.
func GrantsBucket(c *creds.Claims, bucket []byte) bool {
	for i := range c.Grants {
		if c.Grants[i].Access != 0 && c.Grants[i].Bucket == string(bucket) {
			return true
		}
	}
	return false
}

// checkS3Scope reports why the grants of a minted credential do not cover
// every key r touches with the access each needs, or "" when they do. It
// checks
//
//   - the object key, with the op's Access (Read or Write);
//   - the copy source of CopyObject and UploadPartCopy, with Read;
//   - every key of a DeleteObjects body, with Write;
//   - the prefix of a list op, with List: the prefix must lie inside a
//     grant's prefix, so a list with no prefix needs a grant on the whole
//     bucket, and "data/analytics" is not inside grant "data/analytics/"
//     (it would also list "data/analytics2/").
//
// ListBuckets is allowed (the gateway shows only granted buckets);
// HeadBucket and GetBucketLocation are allowed when some grant names the
// bucket; root-only ops, OpUnknown included, are denied.
func checkS3Scope(c *creds.Claims, r *s3proto.Request, deleteKeys [][]byte) string {
	op := r.Op
	if op.RootOnly() {
		return reasonRootOnly
	}
	if op == s3proto.OpListBuckets {
		return ""
	}
	if len(r.Bucket) == 0 {
		return reasonUnclassified
	}
	switch {
	case op == s3proto.OpHeadBucket || op == s3proto.OpGetBucketLocation:
		if !GrantsBucket(c, r.Bucket) {
			return reasonBucket
		}
		return ""
	case op == s3proto.OpDeleteObjects:
		if len(deleteKeys) == 0 {
			return reasonUnclassified
		}
		for _, k := range deleteKeys {
			if len(k) == 0 || !c.Allows(creds.Write, r.Bucket, k) {
				return reasonDeleteKey
			}
		}
		return ""
	case op.IsList():
		if !c.AllowsList(r.Bucket, r.ListPrefix) {
			return reasonListPrefix
		}
		return ""
	case op.IsObject():
		if len(r.Key) == 0 || !c.Allows(op.Access(), r.Bucket, r.Key) {
			return reasonKey
		}
		if op.HasCopySource() {
			if len(r.CopySourceBucket) == 0 || len(r.CopySourceKey) == 0 ||
				!c.Allows(creds.Read, r.CopySourceBucket, r.CopySourceKey) {
				return reasonCopySource
			}
		}
		return ""
	}
	return reasonUnclassified
}
