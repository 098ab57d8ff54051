// Package sigv4 implements AWS Signature Version 4 for S3: it parses and
// verifies header and presigned authentication as S3 itself computes it,
// decodes aws-chunked payloads (signed, unsigned, with trailing checksums)
// into a stream of verified bytes, and signs requests and URLs for an
// upstream.
//
// The API works on byte slices and a small header-reader interface, never on
// an HTTP framework's types, so the gateway (fasthttp), the catalog's remote
// signer and tests (net/http) share one implementation. Verification of a
// typical request does not allocate beyond what the caller provides.
package sigv4
