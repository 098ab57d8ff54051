package gateway

import (
	"github.com/duckicelake/duckicelake/internal/creds"

	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// Reasons CheckScope gives; they name no key, so they are safe both in the
// client's error message and in the audit trail.
const (
	reasonRootOnly     = "the operation is reserved to the operator"
	reasonKey          = "the object key is outside the credential's scope"
	reasonCopySource   = "the copy source is outside the credential's scope"
	reasonDeleteKey    = "a key of the DeleteObjects body is outside the credential's scope"
	reasonListPrefix   = "the list prefix is outside the credential's scope"
	reasonBucket       = "the bucket is outside the credential's scope"
	reasonUnclassified = "the request names no key to check"
)

// CheckScope reports whether the grants of a minted credential cover every
// key r touches, with the access each needs; nil means they do. It checks
//
//   - the object key, with the op's Access (Read or Write);
//   - the copy source of CopyObject and UploadPartCopy, with Read;
//   - every key of a DeleteObjects body (deleteKeys, from
//     ParseDeleteObjects), with Write;
//   - the prefix of a list op, with List: the prefix must lie inside a
//     grant's prefix, so a list with no prefix needs a grant on the whole
//     bucket, and "data/analytics" is not inside grant "data/analytics/"
//     (it would also list "data/analytics2/").
//
// ListBuckets is allowed (the server shows only granted buckets); HeadBucket
// and GetBucketLocation are allowed when some grant names the bucket; root-
// only ops, OpUnknown included, are denied. Operator root credentials do
// not come here. The result is always AccessDenied.
func CheckScope(c *creds.Claims, r *s3proto.Request, deleteKeys [][]byte) *s3proto.Error {
	op := r.Op
	if op.RootOnly() {
		return s3proto.AccessDenied(reasonRootOnly)
	}
	if op == s3proto.OpListBuckets {
		return nil
	}
	if len(r.Bucket) == 0 {
		return s3proto.AccessDenied(reasonUnclassified)
	}
	switch {
	case op == s3proto.OpHeadBucket || op == s3proto.OpGetBucketLocation:
		if !namesBucket(c, r.Bucket) {
			return s3proto.AccessDenied(reasonBucket)
		}
		return nil
	case op == s3proto.OpDeleteObjects:
		if len(deleteKeys) == 0 {
			return s3proto.AccessDenied(reasonUnclassified)
		}
		for _, k := range deleteKeys {
			if len(k) == 0 || !c.Allows(creds.Write, r.Bucket, k) {
				return s3proto.AccessDenied(reasonDeleteKey)
			}
		}
		return nil
	case op.IsList():
		if !c.AllowsList(r.Bucket, r.ListPrefix) {
			return s3proto.AccessDenied(reasonListPrefix)
		}
		return nil
	case op.IsObject():
		if len(r.Key) == 0 || !c.Allows(op.Access(), r.Bucket, r.Key) {
			return s3proto.AccessDenied(reasonKey)
		}
		if op.HasCopySource() {
			if len(r.CopySourceBucket) == 0 || len(r.CopySourceKey) == 0 ||
				!c.Allows(creds.Read, r.CopySourceBucket, r.CopySourceKey) {
				return s3proto.AccessDenied(reasonCopySource)
			}
		}
		return nil
	}
	return s3proto.AccessDenied(reasonUnclassified)
}

// namesBucket reports whether some grant gives any access in bucket.
func namesBucket(c *creds.Claims, bucket []byte) bool {
	for i := range c.Grants {
		if c.Grants[i].Access != 0 && c.Grants[i].Bucket == string(bucket) {
			return true
		}
	}
	return false
}
