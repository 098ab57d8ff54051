// Package sigv4interop checks the sigv4 verifier against the signers of real
// S3 clients: aws-sdk-go-v2, minio-go and botocore (from the pinned test
// venv) talk to a local capture server that verifies every request with
// sigv4, records its wire bytes and answers like S3. The captured requests
// are then replayed with one-byte mutations, each of which must fail with
// the right S3 error code.
//
// The package has tests only. The botocore round trip needs the venv made by
// scripts/venv.sh (or DUCKICELAKE_PYTHON); it is skipped without one unless
// CI is set.
package sigv4interop
