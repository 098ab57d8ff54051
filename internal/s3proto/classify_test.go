package s3proto

import (
	"errors"
	"strings"
	"testing"
)

func copySource(v ...string) Headers { return Headers{"x-amz-copy-source": v} }

var testClassifier = &Classifier{VirtualHostSuffixes: [][]byte{[]byte("s3.localhost"), []byte("s3.example.com")}}

type classifyCase struct {
	name               string
	method, host       string
	path, query        string
	hdr                Headers
	op                 Op
	bucket, key        string
	srcBucket, srcKey  string
	srcVersion, prefix string
	vhost              bool
	err                string // S3 error code; empty = success
	pathOnly           bool   // no virtual-hosted twin
}

// classifyCases are path-style; each that names a bucket is also run
// virtual-hosted (see virtualTwin).
var classifyCases = []classifyCase{
	// Service.
	{name: "ListBuckets", method: "GET", path: "/", op: OpListBuckets, pathOnly: true},
	{name: "ListBuckets sdk-go-v2", method: "GET", path: "/", query: "x-id=ListBuckets", op: OpListBuckets, pathOnly: true},
	{name: "ListBuckets paged", method: "GET", path: "/", query: "max-buckets=10&prefix=la&continuation-token=abc&bucket-region=us-east-1", op: OpListBuckets, prefix: "la", pathOnly: true},
	{name: "ListBuckets empty path", method: "GET", path: "", op: OpListBuckets, pathOnly: true},
	{name: "service subresource", method: "GET", path: "/", query: "location", op: OpUnknown, pathOnly: true},
	{name: "service PUT", method: "PUT", path: "/", op: OpUnknown, pathOnly: true},
	{name: "ListDirectoryBuckets", method: "GET", path: "/", query: "x-id=ListDirectoryBuckets&max-directory-buckets=10", op: OpUnknown, pathOnly: true},

	// Bucket.
	{name: "HeadBucket", method: "HEAD", path: "/lake", op: OpHeadBucket, bucket: "lake"},
	{name: "HeadBucket slash", method: "HEAD", path: "/lake/", op: OpHeadBucket, bucket: "lake"},
	{name: "GetBucketLocation", method: "GET", path: "/lake", query: "location", op: OpGetBucketLocation, bucket: "lake"},
	{name: "GetBucketLocation eq", method: "GET", path: "/lake/", query: "location=", op: OpGetBucketLocation, bucket: "lake"},
	{name: "ListObjectsV2 sdk-go-v2", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fanalytics%2F", op: OpListObjectsV2, bucket: "lake", prefix: "data/analytics/"},
	{name: "ListObjectsV2 boto3", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2F&delimiter=%2F&encoding-type=url", op: OpListObjectsV2, bucket: "lake", prefix: "data/"},
	{name: "ListObjectsV2 minio-go", method: "GET", path: "/lake/", query: "continuation-token=1%2Fabc&delimiter=%2F&encoding-type=url&fetch-owner=true&list-type=2&prefix=data%2Fx%2F&start-after=data%2Fx%2Fa", op: OpListObjectsV2, bucket: "lake", prefix: "data/x/"},
	{name: "ListObjectsV2 duckdb", method: "GET", path: "/lake/", query: "encoding-type=url&list-type=2&prefix=data%2Fanalytics%2Fpart-&delimiter=%2F", op: OpListObjectsV2, bucket: "lake", prefix: "data/analytics/part-"},
	{name: "ListObjectsV2 s3a", method: "GET", path: "/lake/", query: "list-type=2&delimiter=%2F&max-keys=5000&prefix=warehouse%2Ft%2F&fetch-owner=false", op: OpListObjectsV2, bucket: "lake", prefix: "warehouse/t/"},
	{name: "ListObjectsV2 no prefix", method: "GET", path: "/lake", query: "list-type=2", op: OpListObjectsV2, bucket: "lake"},
	{name: "ListObjectsV2 empty prefix", method: "GET", path: "/lake", query: "list-type=2&prefix=&delimiter=", op: OpListObjectsV2, bucket: "lake"},
	{name: "ListObjectsV2 plus is space", method: "GET", path: "/lake", query: "list-type=2&prefix=a+b%2B", op: OpListObjectsV2, bucket: "lake", prefix: "a b+"},
	// A list prefix only filters names: one leading '/' is listed (issue 14 item 10).
	{name: "ListObjectsV2 leading slash", method: "GET", path: "/lake", query: "list-type=2&prefix=%2Fx", op: OpListObjectsV2, bucket: "lake", prefix: "/x"},
	{name: "ListObjectsV2 slash", method: "GET", path: "/lake", query: "list-type=2&prefix=%2F&delimiter=%2F", op: OpListObjectsV2, bucket: "lake", prefix: "/"},
	{name: "ListObjects v1 leading slash", method: "GET", path: "/lake", query: "prefix=%2Fdata%2F", op: OpListObjects, bucket: "lake", prefix: "/data/"},
	{name: "ListObjectVersions leading slash", method: "GET", path: "/lake", query: "versions&prefix=%2Fp", op: OpListObjectVersions, bucket: "lake", prefix: "/p"},
	{name: "ListMultipartUploads leading slash", method: "GET", path: "/lake", query: "uploads&prefix=%2Fp", op: OpListMultipartUploads, bucket: "lake", prefix: "/p"},
	{name: "ListObjectsV2 x-amz presign", method: "GET", path: "/lake", query: "list-type=2&prefix=d%2F&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok&X-Amz-Signature=abc", op: OpListObjectsV2, bucket: "lake", prefix: "d/"},
	{name: "ListObjects v1", method: "GET", path: "/lake", op: OpListObjects, bucket: "lake"},
	{name: "ListObjects v1 paged", method: "GET", path: "/lake/", query: "prefix=a%2F&marker=a%2Fb&max-keys=10&delimiter=%2F", op: OpListObjects, bucket: "lake", prefix: "a/"},
	{name: "ListObjectVersions", method: "GET", path: "/lake", query: "versions&prefix=p%2F&key-marker=p%2Fa&version-id-marker=v", op: OpListObjectVersions, bucket: "lake", prefix: "p/"},
	{name: "ListObjectVersions eq", method: "GET", path: "/lake", query: "versions=&prefix=p%2F", op: OpListObjectVersions, bucket: "lake", prefix: "p/"},
	{name: "ListMultipartUploads", method: "GET", path: "/lake", query: "uploads&prefix=p%2F&key-marker=k&upload-id-marker=u&max-uploads=5", op: OpListMultipartUploads, bucket: "lake", prefix: "p/"},
	{name: "DeleteObjects", method: "POST", path: "/lake", query: "delete", op: OpDeleteObjects, bucket: "lake"},
	{name: "DeleteObjects eq", method: "POST", path: "/lake/", query: "delete=", op: OpDeleteObjects, bucket: "lake"},
	{name: "CreateBucket", method: "PUT", path: "/lake", op: OpCreateBucket, bucket: "lake"},
	{name: "DeleteBucket", method: "DELETE", path: "/lake", op: OpDeleteBucket, bucket: "lake"},
	{name: "GetBucketPolicy", method: "GET", path: "/lake", query: "policy", op: OpBucketAdmin, bucket: "lake"},
	{name: "PutBucketPolicy", method: "PUT", path: "/lake", query: "policy", op: OpBucketAdmin, bucket: "lake"},
	{name: "DeleteBucketPolicy", method: "DELETE", path: "/lake", query: "policy", op: OpBucketAdmin, bucket: "lake"},
	{name: "GetBucketAcl", method: "GET", path: "/lake", query: "acl", op: OpBucketAdmin, bucket: "lake"},
	{name: "PutBucketCors", method: "PUT", path: "/lake", query: "cors", op: OpBucketAdmin, bucket: "lake"},
	{name: "PutBucketLifecycle", method: "PUT", path: "/lake", query: "lifecycle", op: OpBucketAdmin, bucket: "lake"},
	{name: "GetBucketVersioning", method: "GET", path: "/lake", query: "versioning", op: OpBucketAdmin, bucket: "lake"},
	{name: "GetBucketTagging", method: "GET", path: "/lake", query: "tagging", op: OpBucketAdmin, bucket: "lake"},
	{name: "PutBucketTagging", method: "PUT", path: "/lake", query: "tagging", op: OpBucketAdmin, bucket: "lake"},
	{name: "DeleteBucketTagging", method: "DELETE", path: "/lake", query: "tagging", op: OpBucketAdmin, bucket: "lake"},
	{name: "GetBucketEncryption", method: "GET", path: "/lake", query: "encryption", op: OpBucketAdmin, bucket: "lake"},
	{name: "PutObjectLockConfiguration", method: "PUT", path: "/lake", query: "object-lock", op: OpBucketAdmin, bucket: "lake"},
	{name: "GetBucketMetricsConfiguration", method: "GET", path: "/lake", query: "metrics&x-id=GetBucketMetricsConfiguration&id=m1", op: OpBucketAdmin, bucket: "lake"},
	{name: "GetBucketPolicyStatus", method: "GET", path: "/lake", query: "policyStatus", op: OpBucketAdmin, bucket: "lake"},
	{name: "CreateSession", method: "GET", path: "/lake", query: "session", op: OpUnknown, bucket: "lake"},
	{name: "bucket unknown param", method: "GET", path: "/lake", query: "foo=bar", op: OpUnknown, bucket: "lake"},
	{name: "bucket POST form upload", method: "POST", path: "/lake", op: OpPostObject, bucket: "lake"},
	{name: "bucket conflicting subresources", method: "GET", path: "/lake", query: "list-type=2&versions", op: OpUnknown, bucket: "lake"},
	{name: "HeadBucket with subresource", method: "HEAD", path: "/lake", query: "location", op: OpUnknown, bucket: "lake"},
	{name: "minio metadata listing", method: "GET", path: "/lake/", query: "list-type=2&metadata=true&prefix=d%2F", op: OpUnknown, bucket: "lake"},
	{name: "OPTIONS bucket", method: "OPTIONS", path: "/lake", op: OpUnknown, bucket: "lake"},
	{name: "legacy bucket name", method: "HEAD", path: "/Lake_Old", op: OpHeadBucket, bucket: "Lake_Old", pathOnly: true},
	{name: "dotted bucket", method: "HEAD", path: "/my.data.lake", op: OpHeadBucket, bucket: "my.data.lake"},
	{name: "encoded bucket", method: "HEAD", path: "/l%61ke", op: OpHeadBucket, bucket: "lake", pathOnly: true},

	// Objects.
	{name: "GetObject", method: "GET", path: "/lake/data/a.parquet", op: OpGetObject, bucket: "lake", key: "data/a.parquet"},
	{name: "GetObject sdk-go-v2", method: "GET", path: "/lake/data/a.parquet", query: "x-id=GetObject", op: OpGetObject, bucket: "lake", key: "data/a.parquet"},
	{name: "GetObject version", method: "GET", path: "/lake/data/a.parquet", query: "versionId=3%2FL4kqtJl", op: OpGetObject, bucket: "lake", key: "data/a.parquet"},
	{name: "GetObject part", method: "GET", path: "/lake/data/a.parquet", query: "partNumber=2", op: OpGetObject, bucket: "lake", key: "data/a.parquet"},
	{name: "GetObject response headers", method: "GET", path: "/lake/data/a.csv", query: "response-content-type=text%2Fplain&response-content-disposition=attachment%3B%20filename%3D%22a.csv%22&response-cache-control=no-cache&response-expires=0&response-content-encoding=gzip&response-content-language=en", op: OpGetObject, bucket: "lake", key: "data/a.csv"},
	{name: "GetObject presigned", method: "GET", path: "/lake/data/a.parquet", query: "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=t%2Bo%3Dk&X-Amz-Signature=abc&x-id=GetObject", op: OpGetObject, bucket: "lake", key: "data/a.parquet"},
	{name: "HeadObject", method: "HEAD", path: "/lake/data/a.parquet", op: OpHeadObject, bucket: "lake", key: "data/a.parquet"},
	{name: "HeadObject part", method: "HEAD", path: "/lake/data/a.parquet", query: "partNumber=1&versionId=v", op: OpHeadObject, bucket: "lake", key: "data/a.parquet"},
	{name: "GetObjectAttributes", method: "GET", path: "/lake/data/a.parquet", query: "attributes", op: OpGetObjectAttributes, bucket: "lake", key: "data/a.parquet"},
	{name: "GetObjectTagging", method: "GET", path: "/lake/data/a.parquet", query: "tagging", op: OpGetObjectTagging, bucket: "lake", key: "data/a.parquet"},
	{name: "PutObject", method: "PUT", path: "/lake/data/a.parquet", op: OpPutObject, bucket: "lake", key: "data/a.parquet"},
	{name: "PutObject sdk-go-v2", method: "PUT", path: "/lake/data/a.parquet", query: "x-id=PutObject", op: OpPutObject, bucket: "lake", key: "data/a.parquet"},
	{name: "PutObject presigned checksum", method: "PUT", path: "/lake/data/a.parquet", query: "X-Amz-Algorithm=AWS4-HMAC-SHA256&x-amz-checksum-crc32=AAAAAA%3D%3D&x-amz-sdk-checksum-algorithm=CRC32&x-id=PutObject", op: OpPutObject, bucket: "lake", key: "data/a.parquet"},
	{name: "PutObject directory marker", method: "PUT", path: "/lake/data/dir/", op: OpPutObject, bucket: "lake", key: "data/dir/"},
	{name: "CopyObject", method: "PUT", path: "/lake/data/b.parquet", hdr: copySource("lake/data/a.parquet"), op: OpCopyObject, bucket: "lake", key: "data/b.parquet", srcBucket: "lake", srcKey: "data/a.parquet"},
	{name: "CopyObject leading slash", method: "PUT", path: "/lake/data/b.parquet", query: "x-id=CopyObject", hdr: copySource("/other/x%20y%2Bz+w.parquet"), op: OpCopyObject, bucket: "lake", key: "data/b.parquet", srcBucket: "other", srcKey: "x y+z+w.parquet"},
	{name: "CopyObject version", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/data/a%3Fq?versionId=3%2FL4kq"), op: OpCopyObject, bucket: "lake", key: "data/b", srcBucket: "lake", srcKey: "data/a?q", srcVersion: "3/L4kq"},
	{name: "CopyObject encoded slash", method: "PUT", path: "/lake/data/b", hdr: copySource("lake%2Fdata%2Fa"), op: OpCopyObject, bucket: "lake", key: "data/b", srcBucket: "lake", srcKey: "data/a"},
	{name: "PutObjectTagging", method: "PUT", path: "/lake/data/a", query: "tagging", op: OpPutObjectTagging, bucket: "lake", key: "data/a"},
	{name: "DeleteObjectTagging", method: "DELETE", path: "/lake/data/a", query: "tagging&versionId=v", op: OpDeleteObjectTagging, bucket: "lake", key: "data/a"},
	{name: "DeleteObject", method: "DELETE", path: "/lake/data/a", op: OpDeleteObject, bucket: "lake", key: "data/a"},
	{name: "DeleteObject sdk-go-v2", method: "DELETE", path: "/lake/data/a", query: "x-id=DeleteObject&versionId=v", op: OpDeleteObject, bucket: "lake", key: "data/a"},
	{name: "CreateMultipartUpload", method: "POST", path: "/lake/data/big", query: "uploads", op: OpCreateMultipartUpload, bucket: "lake", key: "data/big"},
	{name: "CreateMultipartUpload eq", method: "POST", path: "/lake/data/big", query: "uploads=", op: OpCreateMultipartUpload, bucket: "lake", key: "data/big"},
	{name: "CreateMultipartUpload encoded name", method: "POST", path: "/lake/data/big", query: "%75ploads", op: OpCreateMultipartUpload, bucket: "lake", key: "data/big"},
	{name: "UploadPart", method: "PUT", path: "/lake/data/big", query: "partNumber=1&uploadId=2~abc", op: OpUploadPart, bucket: "lake", key: "data/big"},
	{name: "UploadPart sdk-go-v2", method: "PUT", path: "/lake/data/big", query: "uploadId=abc&x-id=UploadPart&partNumber=10000", op: OpUploadPart, bucket: "lake", key: "data/big"},
	{name: "UploadPartCopy", method: "PUT", path: "/lake/data/big", query: "partNumber=2&uploadId=abc&x-id=UploadPartCopy", hdr: copySource("src/data/part%231"), op: OpUploadPartCopy, bucket: "lake", key: "data/big", srcBucket: "src", srcKey: "data/part#1"},
	{name: "CompleteMultipartUpload", method: "POST", path: "/lake/data/big", query: "uploadId=abc", op: OpCompleteMultipartUpload, bucket: "lake", key: "data/big"},
	{name: "AbortMultipartUpload", method: "DELETE", path: "/lake/data/big", query: "uploadId=abc&x-id=AbortMultipartUpload", op: OpAbortMultipartUpload, bucket: "lake", key: "data/big"},
	{name: "ListParts", method: "GET", path: "/lake/data/big", query: "uploadId=abc&max-parts=100&part-number-marker=3&x-id=ListParts", op: OpListParts, bucket: "lake", key: "data/big"},
	{name: "object acl", method: "GET", path: "/lake/data/a", query: "acl", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "object retention", method: "PUT", path: "/lake/data/a", query: "retention", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "object legal-hold", method: "GET", path: "/lake/data/a", query: "legal-hold", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "object torrent", method: "GET", path: "/lake/data/a", query: "torrent", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "RestoreObject", method: "POST", path: "/lake/data/a", query: "restore", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "SelectObjectContent", method: "POST", path: "/lake/data/a", query: "select&select-type=2", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "RenameObject", method: "PUT", path: "/lake/data/a", query: "renameObject", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "object POST no subresource", method: "POST", path: "/lake/data/a", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "object unknown param", method: "GET", path: "/lake/data/a", query: "foo=bar", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "object param case matters", method: "PUT", path: "/lake/data/a", query: "UploadId=1&partNumber=1", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "PUT uploadId alone", method: "PUT", path: "/lake/data/a", query: "uploadId=1", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "PUT partNumber alone", method: "PUT", path: "/lake/data/a", query: "partNumber=1", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "GET uploadId partNumber", method: "GET", path: "/lake/data/a", query: "uploadId=1&partNumber=1", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "lower-case method", method: "get", path: "/lake/data/a", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "PATCH", method: "PATCH", path: "/lake/data/a", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "list-type on object ignored as subresource", method: "GET", path: "/lake/data/a", query: "list-type=2", op: OpUnknown, bucket: "lake", key: "data/a"},
	{name: "empty query params", method: "GET", path: "/lake/data/a", query: "&&x-id=GetObject&", op: OpGetObject, bucket: "lake", key: "data/a"},

	// Key encoding: decoded exactly once, kept byte-exact.
	{name: "encoded slash", method: "GET", path: "/lake/data%2Fa%2Fb", op: OpGetObject, bucket: "lake", key: "data/a/b"},
	{name: "double-encoded slash stays literal", method: "GET", path: "/lake/data/a%252Fb", op: OpGetObject, bucket: "lake", key: "data/a%2Fb"},
	{name: "double-encoded dots stay literal", method: "GET", path: "/lake/data/%252e%252e/x", op: OpGetObject, bucket: "lake", key: "data/%2e%2e/x"},
	{name: "plus is literal in path", method: "GET", path: "/lake/data/a+b", op: OpGetObject, bucket: "lake", key: "data/a+b"},
	{name: "encoded space", method: "GET", path: "/lake/data/a%20b", op: OpGetObject, bucket: "lake", key: "data/a b"},
	{name: "unicode NFC", method: "GET", path: "/lake/caf%C3%A9", op: OpGetObject, bucket: "lake", key: "caf\u00e9"},
	{name: "unicode NFD", method: "GET", path: "/lake/cafe%CC%81", op: OpGetObject, bucket: "lake", key: "cafe\u0301"},
	{name: "raw unicode", method: "GET", path: "/lake/caf\u00e9/\u65e5\u672c", op: OpGetObject, bucket: "lake", key: "caf\u00e9/\u65e5\u672c"},
	{name: "dots inside names", method: "GET", path: "/lake/a..b/.hidden/.../x.", op: OpGetObject, bucket: "lake", key: "a..b/.hidden/.../x."},
	{name: "lower-case hex", method: "GET", path: "/lake/a%2fb%3a", op: OpGetObject, bucket: "lake", key: "a/b:"},
	{name: "key 1024 bytes", method: "GET", path: "/lake/" + strings.Repeat("k", 1024), op: OpGetObject, bucket: "lake", key: strings.Repeat("k", 1024)},

	// Refused keys.
	{name: "dotdot raw", method: "GET", path: "/lake/data/x/../../secret", err: "InvalidArgument"},
	{name: "dotdot encoded", method: "GET", path: "/lake/data/x/%2e%2e/%2E%2E/secret", err: "InvalidArgument"},
	{name: "dotdot via encoded slash", method: "GET", path: "/lake/data/x%2F..%2Fsecret", err: "InvalidArgument"},
	{name: "dot segment", method: "PUT", path: "/lake/./data/a", err: "InvalidArgument"},
	{name: "final dot", method: "GET", path: "/lake/data/.", err: "InvalidArgument"},
	{name: "final dotdot", method: "GET", path: "/lake/data/..", err: "InvalidArgument"},
	{name: "only dotdot", method: "GET", path: "/lake/..", err: "InvalidArgument"},
	{name: "empty segment", method: "GET", path: "/lake/data//a", err: "InvalidArgument"},
	{name: "leading slash key", method: "GET", path: "/lake//data/a", err: "InvalidArgument"},
	{name: "double trailing slash", method: "PUT", path: "/lake/data//", err: "InvalidArgument"},
	{name: "backslash raw", method: "GET", path: "/lake/data\\..\\secret", err: "InvalidArgument"},
	{name: "backslash encoded", method: "GET", path: "/lake/data%5Ca", err: "InvalidArgument"},
	{name: "NUL", method: "GET", path: "/lake/data/a%00b", err: "InvalidArgument"},
	{name: "invalid UTF-8", method: "GET", path: "/lake/data/a%FFb", err: "InvalidArgument"},
	{name: "overlong UTF-8 slash", method: "GET", path: "/lake/data/%C0%AF..", err: "InvalidArgument"},
	{name: "key too long", method: "GET", path: "/lake/" + strings.Repeat("k", 1025), err: "KeyTooLongError"},
	{name: "bad escape", method: "GET", path: "/lake/data/a%zz", err: "InvalidURI"},
	{name: "truncated escape", method: "GET", path: "/lake/data/a%2", err: "InvalidURI"},
	{name: "control byte in path", method: "GET", path: "/lake/data/a\x01", err: "InvalidURI"},
	{name: "fragment in path", method: "GET", path: "/lake/data/a#b", err: "InvalidURI"},
	{name: "relative path", method: "GET", path: "lake/data/a", err: "InvalidURI", pathOnly: true},

	// Refused buckets.
	{name: "short bucket", method: "GET", path: "/la/x", err: "InvalidBucketName", pathOnly: true},
	{name: "bucket leading dash", method: "GET", path: "/-lake/x", err: "InvalidBucketName", pathOnly: true},
	{name: "bucket double dot", method: "GET", path: "/la..ke/x", err: "InvalidBucketName", pathOnly: true},
	{name: "bucket dotdot", method: "GET", path: "/../lake/x", err: "InvalidBucketName", pathOnly: true},
	{name: "bucket encoded slash", method: "GET", path: "/lake%2Fother/x", err: "InvalidBucketName", pathOnly: true},
	{name: "bucket empty", method: "GET", path: "//lake/x", err: "InvalidBucketName", pathOnly: true},
	{name: "bucket colon", method: "GET", path: "/arn:aws:s3/x", err: "InvalidBucketName", pathOnly: true},

	// Query errors.
	{name: "duplicate prefix", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2Fa%2F&prefix=", err: "InvalidArgument"},
	{name: "duplicate uploadId", method: "POST", path: "/lake/a", query: "uploadId=1&uploadId=2", err: "InvalidArgument"},
	{name: "duplicate versionId", method: "GET", path: "/lake/a", query: "versionId=1&versionId=2", err: "InvalidArgument"},
	{name: "duplicate list-type", method: "GET", path: "/lake", query: "list-type=2&list-type=2", err: "InvalidArgument"},
	{name: "list-type 1", method: "GET", path: "/lake", query: "list-type=1", err: "InvalidArgument"},
	{name: "bad escape in prefix", method: "GET", path: "/lake", query: "list-type=2&prefix=%G0", err: "InvalidURI"},
	{name: "bad escape in other value", method: "GET", path: "/lake/a", query: "response-content-type=%", err: "InvalidURI"},
	{name: "bad escape in name", method: "GET", path: "/lake/a", query: "%zz=1", err: "InvalidURI"},
	{name: "hoisted copy source", method: "PUT", path: "/lake/data/b", query: "x-amz-copy-source=lake%2Fsecret", err: "InvalidArgument"},
	{name: "hoisted copy source mixed case", method: "PUT", path: "/lake/data/b", query: "X-Amz-Copy-Source=lake%2Fsecret", err: "InvalidArgument"},
	{name: "prefix dotdot", method: "GET", path: "/lake", query: "list-type=2&prefix=data%2F..%2Fsecret%2F", err: "InvalidArgument"},
	{name: "prefix leading double slash", method: "GET", path: "/lake", query: "list-type=2&prefix=%2F%2Fdata", err: "InvalidArgument"},
	{name: "prefix leading slash dotdot", method: "GET", path: "/lake", query: "list-type=2&prefix=%2F..%2Fdata", err: "InvalidArgument"},
	{name: "prefix leading slash dot", method: "GET", path: "/lake", query: "prefix=%2F.%2F", err: "InvalidArgument"},
	{name: "prefix backslash", method: "GET", path: "/lake", query: "prefix=data%5C", err: "InvalidArgument"},
	{name: "prefix NUL", method: "GET", path: "/lake", query: "versions&prefix=a%00", err: "InvalidArgument"},
	{name: "prefix too long", method: "GET", path: "/lake", query: "list-type=2&prefix=" + strings.Repeat("p", 1025), err: "KeyTooLongError"},

	// Copy source errors.
	{name: "copy source no key", method: "PUT", path: "/lake/data/b", hdr: copySource("lake"), err: "InvalidArgument"},
	{name: "copy source empty key", method: "PUT", path: "/lake/data/b", hdr: copySource("/lake/"), err: "InvalidArgument"},
	{name: "copy source empty", method: "PUT", path: "/lake/data/b", hdr: copySource(""), err: "InvalidArgument"},
	{name: "copy source dotdot", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/data/x/../../secret"), err: "InvalidArgument"},
	{name: "copy source encoded dotdot", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/data%2F%2e%2e%2Fsecret"), err: "InvalidArgument"},
	{name: "copy source bad escape", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/a%zz"), err: "InvalidArgument"},
	{name: "copy source access point", method: "PUT", path: "/lake/data/b", hdr: copySource("arn:aws:s3:us-east-1:123456789012:accesspoint/ap/object/k"), err: "InvalidBucketName"},
	{name: "copy source other param", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/a?partNumber=1"), err: "InvalidArgument"},
	{name: "copy source empty version", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/a?versionId="), err: "InvalidArgument"},
	{name: "copy source two versions", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/a?versionId=1&versionId=2"), err: "InvalidArgument"},
	{name: "copy source twice", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/a", "lake/b"), err: "InvalidArgument"},
	{name: "copy source on tagging", method: "PUT", path: "/lake/data/b", query: "tagging", hdr: copySource("lake/a"), err: "InvalidRequest"},
	{name: "copy source too long", method: "PUT", path: "/lake/data/b", hdr: copySource("lake/" + strings.Repeat("k", 1025)), err: "KeyTooLongError"},
	{name: "copy source ignored on GET", method: "GET", path: "/lake/data/b", hdr: copySource("lake/secret"), op: OpGetObject, bucket: "lake", key: "data/b"},
}

// virtualTwin rewrites a path-style case to virtual-hosted style.
func virtualTwin(tc classifyCase) (classifyCase, bool) {
	if tc.pathOnly || !strings.HasPrefix(tc.path, "/") || len(tc.path) < 2 {
		return tc, false
	}
	rest := tc.path[1:]
	bucket, key, hasKey := strings.Cut(rest, "/")
	if strings.ContainsAny(bucket, "%") || bucket == "" {
		return tc, false
	}
	tc.name += " (virtual-hosted)"
	tc.host = bucket + ".s3.localhost:9000"
	tc.path = "/"
	if hasKey {
		tc.path += key
	}
	tc.vhost = tc.err == ""
	return tc, true
}

func runClassify(t *testing.T, c *Classifier, r *Request, tc classifyCase) {
	t.Helper()
	host := tc.host
	if host == "" {
		host = "127.0.0.1:9000"
	}
	hdr := tc.hdr
	if hdr == nil {
		hdr = Headers{}
	}
	err := c.Classify(r, []byte(tc.method), []byte(host), []byte(tc.path), []byte(tc.query), hdr)
	if tc.err != "" {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("err = %v, want S3 error %s", err, tc.err)
		}
		if e.Code != tc.err || e.Status != 400 {
			t.Fatalf("err = %s (%d) %q, want %s (400)", e.Code, e.Status, e.Message, tc.err)
		}
		if r.Op != OpUnknown {
			t.Errorf("Op = %v after error, want Unknown", r.Op)
		}
		return
	}
	if err != nil {
		t.Fatalf("Classify: %v", err)
	}
	got := [...]string{r.Op.String(), string(r.Bucket), string(r.Key), string(r.CopySourceBucket), string(r.CopySourceKey), string(r.CopySourceVersion), string(r.ListPrefix)}
	want := [...]string{tc.op.String(), tc.bucket, tc.key, tc.srcBucket, tc.srcKey, tc.srcVersion, tc.prefix}
	names := [...]string{"Op", "Bucket", "Key", "CopySourceBucket", "CopySourceKey", "CopySourceVersion", "ListPrefix"}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s = %q, want %q", names[i], got[i], want[i])
		}
	}
	if r.VirtualHosted != tc.vhost {
		t.Errorf("VirtualHosted = %v, want %v", r.VirtualHosted, tc.vhost)
	}
}

func TestClassify(t *testing.T) {
	var r Request // reused across cases on purpose: Reset must clear everything
	for _, tc := range classifyCases {
		t.Run(tc.name, func(t *testing.T) { runClassify(t, testClassifier, &r, tc) })
		if vt, ok := virtualTwin(tc); ok {
			t.Run(vt.name, func(t *testing.T) { runClassify(t, testClassifier, &r, vt) })
		}
	}
}

// TestClassifyHostConfusion covers a Host and a path that name different
// buckets: the Host wins and the whole path is the key, as in S3, so the
// scope check sees the bucket the upstream will act on.
func TestClassifyHostConfusion(t *testing.T) {
	cases := []classifyCase{
		{name: "path names another bucket", method: "GET", host: "lake.s3.localhost", path: "/secret/x", op: OpGetObject, bucket: "lake", key: "secret/x", vhost: true},
		{name: "path repeats the bucket", method: "GET", host: "lake.s3.localhost:9000", path: "/lake/x", op: OpGetObject, bucket: "lake", key: "lake/x", vhost: true},
		{name: "path is a bucket only", method: "GET", host: "lake.s3.localhost", path: "/secret", op: OpGetObject, bucket: "lake", key: "secret", vhost: true},
		// The path names a key, so this is not a listing of "secret" but a
		// GET of key "secret/" with a parameter objects do not take.
		{name: "list with path bucket", method: "GET", host: "lake.s3.localhost", path: "/secret/", query: "list-type=2", op: OpUnknown, bucket: "lake", key: "secret/", vhost: true},
		{name: "host case", method: "GET", host: "LAKE.S3.LocalHost:9000", path: "/x", op: OpGetObject, bucket: "lake", key: "x", vhost: true},
		{name: "host trailing dot", method: "GET", host: "lake.s3.localhost.", path: "/x", op: OpGetObject, bucket: "lake", key: "x", vhost: true},
		{name: "second suffix", method: "GET", host: "lake.s3.example.com", path: "/x", op: OpGetObject, bucket: "lake", key: "x", vhost: true},
		{name: "dotted bucket host", method: "HEAD", host: "my.data.lake.s3.localhost", path: "/", op: OpHeadBucket, bucket: "my.data.lake", vhost: true},
		{name: "host is the suffix", method: "GET", host: "s3.localhost:9000", path: "/secret/x", op: OpGetObject, bucket: "secret", key: "x"},
		{name: "suffix without dot boundary", method: "GET", host: "lakes3.localhost", path: "/secret/x", op: OpGetObject, bucket: "secret", key: "x"},
		{name: "suffix inside a foreign host", method: "GET", host: "lake.s3.localhost.evil.com", path: "/secret/x", op: OpGetObject, bucket: "secret", key: "x"},
		{name: "IPv6 host", method: "GET", host: "[::1]:9000", path: "/secret/x", op: OpGetObject, bucket: "secret", key: "x"},
		{name: "empty host", method: "GET", host: "", path: "/secret/x", op: OpGetObject, bucket: "secret", key: "x"},
		{name: "invalid host bucket", method: "GET", host: "a.s3.localhost", path: "/lake/x", err: "InvalidBucketName"},
		{name: "host bucket with bad label", method: "GET", host: "-lake.s3.localhost", path: "/x", err: "InvalidBucketName"},
		{name: "virtual leading slash key", method: "GET", host: "lake.s3.localhost", path: "//secret", err: "InvalidArgument"},
		{name: "virtual dotdot key", method: "GET", host: "lake.s3.localhost", path: "/../secret/x", err: "InvalidArgument"},
	}
	var r Request
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runClassify(t, testClassifier, &r, tc) })
	}

	// Without suffixes every Host is path-style.
	t.Run("no suffixes", func(t *testing.T) {
		runClassify(t, &Classifier{}, &r, classifyCase{method: "GET", host: "lake.s3.localhost", path: "/secret/x", op: OpGetObject, bucket: "secret", key: "x"})
	})
}

// TestClassifyReuse checks that a reused Request keeps nothing from the
// previous request and that its slices do not alias each other.
func TestClassifyReuse(t *testing.T) {
	var r Request
	if err := testClassifier.Classify(&r, []byte("PUT"), nil, []byte("/lake/dst"), nil, copySource("src/key?versionId=v")); err != nil {
		t.Fatal(err)
	}
	key := r.Key
	key = append(key, "-appended"...) // capacity-limited: must not clobber the copy source
	_ = key
	if string(r.CopySourceBucket) != "src" || string(r.CopySourceKey) != "key" {
		t.Fatalf("copy source = %q/%q after appending to Key", r.CopySourceBucket, r.CopySourceKey)
	}
	if err := testClassifier.Classify(&r, []byte("GET"), nil, []byte("/lake/x"), nil, Headers{}); err != nil {
		t.Fatal(err)
	}
	if r.CopySourceBucket != nil || r.CopySourceKey != nil || r.CopySourceVersion != nil || r.ListPrefix != nil || r.VirtualHosted {
		t.Fatalf("stale fields after reuse: %+v", r)
	}
	if err := testClassifier.Classify(&r, []byte("GET"), nil, []byte("/lake/a%zz"), nil, Headers{}); err == nil {
		t.Fatal("want error")
	}
	if r.Op != OpUnknown || r.Bucket != nil || r.Key != nil {
		t.Fatalf("fields set after error: %+v", r)
	}
	// A nil HeaderReader is allowed: no copy source can be read.
	if err := testClassifier.Classify(&r, []byte("PUT"), nil, []byte("/lake/x"), nil, nil); err != nil || r.Op != OpPutObject {
		t.Fatalf("nil headers: op %v err %v", r.Op, err)
	}
}

func TestAppendPathRoundTrip(t *testing.T) {
	cases := []struct{ path, want string }{
		{"/", "/"},
		{"/lake", "/lake"},
		{"/lake/", "/lake"},
		{"/lake/data/a.parquet", "/lake/data/a.parquet"},
		{"/lake/a+b%20c~d", "/lake/a%2Bb%20c~d"},
		{"/lake/a%252Fb", "/lake/a%252Fb"},
		{"/lake/data%2Fx", "/lake/data/x"},
		{"/lake/caf%C3%A9/%3F%2A%23", "/lake/caf%C3%A9/%3F%2A%23"},
		{"/lake/caf%C3%A9/%3f*", "/lake/caf%C3%A9/%3F%2A"},
	}
	var r, r2 Request
	for _, tc := range cases {
		path := tc.path
		if err := testClassifier.Classify(&r, []byte("GET"), nil, []byte(path), nil, Headers{}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got := string(r.AppendPath(nil))
		if got != tc.want {
			t.Errorf("AppendPath(%s) = %s, want %s", path, got, tc.want)
		}
		if err := testClassifier.Classify(&r2, []byte("GET"), nil, []byte(got), nil, Headers{}); err != nil {
			t.Fatalf("reclassify %s: %v", got, err)
		}
		if string(r2.Bucket) != string(r.Bucket) || string(r2.Key) != string(r.Key) {
			t.Errorf("round trip %s: %q/%q != %q/%q", path, r2.Bucket, r2.Key, r.Bucket, r.Key)
		}
	}
}

func TestAppendCopySource(t *testing.T) {
	var r, r2 Request
	for _, src := range []string{"lake/a%20b+c", "/lake/d%2Fe%3Ff?versionId=v%2F1", "src/caf%C3%A9"} {
		if err := testClassifier.Classify(&r, []byte("PUT"), nil, []byte("/lake/dst"), nil, copySource(src)); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		enc := string(r.AppendCopySource(nil))
		if err := testClassifier.Classify(&r2, []byte("PUT"), nil, []byte("/lake/dst"), nil, copySource(enc)); err != nil {
			t.Fatalf("%s → %s: %v", src, enc, err)
		}
		if string(r2.CopySourceBucket) != string(r.CopySourceBucket) || string(r2.CopySourceKey) != string(r.CopySourceKey) || string(r2.CopySourceVersion) != string(r.CopySourceVersion) {
			t.Errorf("%s → %s → %q/%q?%q", src, enc, r2.CopySourceBucket, r2.CopySourceKey, r2.CopySourceVersion)
		}
		if strings.ContainsAny(enc, " +") {
			t.Errorf("%s → %s: ambiguous characters left unencoded", src, enc)
		}
	}
	r.Reset()
	if got := r.AppendCopySource([]byte("x")); string(got) != "x" {
		t.Errorf("no copy source appended %q", got)
	}
}

// Every Op has a distinct name, and the access table is what AdmitS3 and
// the server rely on.
func TestOpTable(t *testing.T) {
	seen := map[string]Op{}
	for o := OpUnknown; o < NumOps; o++ {
		name := o.String()
		if prev, dup := seen[name]; dup || name == "" {
			t.Errorf("op %d name %q (dup of %d)", o, name, prev)
		}
		seen[name] = o
		if o.IsObject() && o.Access() == 0 {
			t.Errorf("%v names an object but needs no access", o)
		}
		if o.RootOnly() && o.Access() != 0 {
			t.Errorf("%v is root-only but has access %v", o, o.Access())
		}
		if !o.RootOnly() && o.Access() == 0 && o != OpListBuckets && o != OpHeadBucket && o != OpGetBucketLocation {
			t.Errorf("%v: no access and not root-only", o)
		}
	}
	if NumOps.String() != "Unknown" || !NumOps.RootOnly() || NumOps.Access() != 0 || NumOps.IsObject() {
		t.Error("out-of-range Op must behave as Unknown")
	}
	for _, o := range []Op{OpUnknown, OpCreateBucket, OpDeleteBucket, OpBucketAdmin} {
		if !o.RootOnly() {
			t.Errorf("%v must be root-only", o)
		}
	}
}

// TestClassifyZeroAlloc is the allocation budget BenchmarkClassifyGet
// reports, enforced: the hot request shapes allocate nothing once the
// Request's buffers have grown.
func TestClassifyZeroAlloc(t *testing.T) {
	reqs := []struct{ method, host, path, query string }{
		{"GET", "127.0.0.1:9000", "/lake/data/analytics/part-0001.parquet", "x-id=GetObject"},
		{"HEAD", "lake.s3.localhost:9000", "/data/analytics/part%200001.parquet", ""},
		{"GET", "127.0.0.1:9000", "/lake/", "list-type=2&prefix=data%2Fanalytics%2F&delimiter=%2F&encoding-type=url"},
		{"PUT", "127.0.0.1:9000", "/lake/data/x", "partNumber=1&uploadId=abc&x-id=UploadPart&X-Amz-Security-Token=tok"},
	}
	var r Request
	hdr := Headers{}
	for _, q := range reqs {
		m, h, p, qs := []byte(q.method), []byte(q.host), []byte(q.path), []byte(q.query)
		allocs := testing.AllocsPerRun(100, func() {
			if err := testClassifier.Classify(&r, m, h, p, qs, hdr); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s %s?%s: %v allocs per Classify, want 0", q.method, q.path, q.query, allocs)
		}
	}
}

func BenchmarkClassifyGet(b *testing.B) {
	var r Request
	c := testClassifier
	m, h, p, q := []byte("GET"), []byte("127.0.0.1:9000"), []byte("/lake/data/analytics/part-0001.parquet"), []byte("x-id=GetObject")
	hdr := Headers{}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Classify(&r, m, h, p, q, hdr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClassifyListV2(b *testing.B) {
	var r Request
	c := testClassifier
	m, h, p, q := []byte("GET"), []byte("lake.s3.localhost:9000"), []byte("/"), []byte("list-type=2&prefix=data%2Fanalytics%2F&delimiter=%2F&encoding-type=url&continuation-token=1%2Fabcdef")
	hdr := Headers{}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Classify(&r, m, h, p, q, hdr); err != nil {
			b.Fatal(err)
		}
	}
}
