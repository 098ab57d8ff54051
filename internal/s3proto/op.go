package s3proto

import "github.com/duckicelake/duckicelake/internal/creds"

// Op is the S3 operation a request performs, decided by Classify from the
// method, the path and the query's sub-resource names alone.
type Op uint8

// The operations the gateway knows. OpUnknown covers every request whose
// method and sub-resources name no operation below; it is root-only, so an
// unsupported sub-resource is denied to minted credentials.
const (
	OpUnknown Op = iota
	OpListBuckets
	OpHeadBucket
	OpGetBucketLocation
	OpListObjectsV2
	OpListObjects
	OpListObjectVersions
	OpListMultipartUploads
	OpGetObject
	OpHeadObject
	OpGetObjectAttributes
	OpGetObjectTagging
	OpPutObject
	OpCopyObject
	OpPutObjectTagging
	OpDeleteObjectTagging
	OpDeleteObject
	OpDeleteObjects
	OpCreateMultipartUpload
	OpUploadPart
	OpUploadPartCopy
	OpCompleteMultipartUpload
	OpAbortMultipartUpload
	OpListParts
	OpCreateBucket
	OpDeleteBucket
	// OpBucketAdmin is any other bucket sub-resource (policy, acl, cors,
	// lifecycle, versioning, tagging, encryption, …): root only.
	OpBucketAdmin
	// OpPostObject is a browser-form upload, a POST to the bucket with no
	// sub-resource. Its credential, policy and key are in the body
	// (ParsePostFormHead); the gateway admits it as the PutObject of that
	// key. As an op of its own it is admitted to no one (root-only), so a
	// caller that cannot read the form, such as the remote signer, refuses
	// it.
	OpPostObject

	// NumOps is the number of ops, the length of tables indexed by Op.
	NumOps
)

// Access is the scope a credential grant carries: a bitmask of
// creds.Read, creds.Write and creds.List.
type Access = creds.Access

// opInfo is indexed by Op. An access of 0 on an op that is not root-only
// means governance.AdmitS3 decides by bucket alone.
var opInfo = [NumOps]struct {
	name     string
	access   Access
	rootOnly bool
	object   bool // the op names one object key
}{
	OpUnknown:                 {name: "Unknown", rootOnly: true},
	OpListBuckets:             {name: "ListBuckets"},
	OpHeadBucket:              {name: "HeadBucket"},
	OpGetBucketLocation:       {name: "GetBucketLocation"},
	OpListObjectsV2:           {name: "ListObjectsV2", access: creds.List},
	OpListObjects:             {name: "ListObjects", access: creds.List},
	OpListObjectVersions:      {name: "ListObjectVersions", access: creds.List},
	OpListMultipartUploads:    {name: "ListMultipartUploads", access: creds.List},
	OpGetObject:               {name: "GetObject", access: creds.Read, object: true},
	OpHeadObject:              {name: "HeadObject", access: creds.Read, object: true},
	OpGetObjectAttributes:     {name: "GetObjectAttributes", access: creds.Read, object: true},
	OpGetObjectTagging:        {name: "GetObjectTagging", access: creds.Read, object: true},
	OpPutObject:               {name: "PutObject", access: creds.Write, object: true},
	OpCopyObject:              {name: "CopyObject", access: creds.Write, object: true},
	OpPutObjectTagging:        {name: "PutObjectTagging", access: creds.Write, object: true},
	OpDeleteObjectTagging:     {name: "DeleteObjectTagging", access: creds.Write, object: true},
	OpDeleteObject:            {name: "DeleteObject", access: creds.Write, object: true},
	OpDeleteObjects:           {name: "DeleteObjects", access: creds.Write},
	OpCreateMultipartUpload:   {name: "CreateMultipartUpload", access: creds.Write, object: true},
	OpUploadPart:              {name: "UploadPart", access: creds.Write, object: true},
	OpUploadPartCopy:          {name: "UploadPartCopy", access: creds.Write, object: true},
	OpCompleteMultipartUpload: {name: "CompleteMultipartUpload", access: creds.Write, object: true},
	OpAbortMultipartUpload:    {name: "AbortMultipartUpload", access: creds.Write, object: true},
	// Parts of an upload in progress belong to its writer: a read-only
	// credential has no business with them.
	OpListParts:    {name: "ListParts", access: creds.Write, object: true},
	OpCreateBucket: {name: "CreateBucket", rootOnly: true},
	OpDeleteBucket: {name: "DeleteBucket", rootOnly: true},
	OpBucketAdmin:  {name: "BucketAdmin", rootOnly: true},
	OpPostObject:   {name: "PostObject", rootOnly: true},
}

// String returns the S3 operation name, e.g. "GetObject"; it is safe as a
// metrics label.
func (o Op) String() string {
	if o >= NumOps {
		return "Unknown"
	}
	return opInfo[o].name
}

// Access returns the scope the op needs on the keys it names: Read or Write
// on its object key (and, for DeleteObjects, on every key of the body), List
// on a list prefix. It is 0 for the ops AdmitS3 decides by bucket alone
// (ListBuckets, HeadBucket, GetBucketLocation) and for root-only ops. The
// copy source of CopyObject and UploadPartCopy always needs Read besides.
func (o Op) Access() Access {
	if o >= NumOps {
		return 0
	}
	return opInfo[o].access
}

// RootOnly reports whether only the operator's root credentials may perform
// the op. OpUnknown is root-only: what the gateway cannot classify, it does
// not let a minted credential do.
func (o Op) RootOnly() bool {
	if o >= NumOps {
		return true
	}
	return opInfo[o].rootOnly
}

// IsObject reports whether the op names a single object key (Request.Key is
// non-empty after a successful Classify).
func (o Op) IsObject() bool {
	if o >= NumOps {
		return false
	}
	return opInfo[o].object
}

// IsList reports whether the op lists keys under Request.ListPrefix.
func (o Op) IsList() bool {
	switch o {
	case OpListObjectsV2, OpListObjects, OpListObjectVersions, OpListMultipartUploads:
		return true
	}
	return false
}

// HasCopySource reports whether the op reads a copy source
// (x-amz-copy-source).
func (o Op) HasCopySource() bool { return o == OpCopyObject || o == OpUploadPartCopy }
