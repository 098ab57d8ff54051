package sigv4interop

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/duckicelake/duckicelake/sigv4"
)

// Minimal reproductions of what the client round trips found in sigv4. Each
// states the behaviour S3 has; they fail until sigv4 is fixed.

// A body sent with x-amz-content-sha256 and a checksum header (aws-sdk-go-v2
// and botocore over plain HTTP for PutObject/UploadPart, every client for
// DeleteObjects) is read through NewChecksumReader over the SHA-256 reader.
// When the hash does not match, the answer must stay
// XAmzContentSHA256Mismatch: the checksum reader must not turn the inner
// reader's *Error into IncompleteBody.
func TestChecksumReaderKeepsInnerCode(t *testing.T) {
	body := []byte("hello")
	wrongHash := sha256.Sum256([]byte("hellO"))
	for _, h := range []struct {
		alg   sigv4.ChecksumAlgorithm
		value string
	}{
		{sigv4.ChecksumCRC32, "NhCmhg=="},               // CRC32("hello")
		{sigv4.ChecksumMD5, "XUFAKrxLKna5cZ2REBfFkg=="}, // MD5("hello")
	} {
		r := sigv4.NewChecksumReader(sigv4.NewSHA256Reader(bytes.NewReader(body), wrongHash, int64(len(body))),
			h.alg, []byte(h.value))
		_, err := io.ReadAll(r)
		if got := sigv4.CodeOf(err); got != sigv4.ErrXAmzContentSHA256Mismatch {
			t.Errorf("%s over a SHA-256 mismatch: got %v (code %s), want XAmzContentSHA256Mismatch", h.alg, err, got)
		}
	}
}

// "NhCmhh==" differs from CRC32("hello") = "NhCmhg==" only in base64 padding
// bits, so a lenient decoder yields the right digest. It is not the
// canonical encoding the checksum.go doc promises to require, and a one-byte
// change to a trailer or checksum header must not verify.
func TestChecksumNonCanonicalBase64(t *testing.T) {
	const nonCanonical = "NhCmhh=="
	body := []byte("hello")
	check := func(what string, r io.Reader) {
		t.Helper()
		_, err := io.ReadAll(r)
		switch got := sigv4.CodeOf(err); {
		case err == nil:
			t.Errorf("%s with checksum %q verified; want InvalidRequest (or BadDigest)", what, nonCanonical)
		case got != sigv4.ErrInvalidRequest && got != sigv4.ErrBadDigest:
			t.Errorf("%s: got %v, want InvalidRequest (or BadDigest)", what, err)
		}
	}
	check("x-amz-checksum-crc32 header", sigv4.NewChecksumReader(bytes.NewReader(body), sigv4.ChecksumCRC32, []byte(nonCanonical)))
	wire := "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:" + nonCanonical + "\r\n\r\n"
	check("STREAMING-UNSIGNED-PAYLOAD-TRAILER trailer", sigv4.NewChunkedReader(bytes.NewReader([]byte(wire)),
		&sigv4.ChunkedConfig{Trailer: []byte("x-amz-checksum-crc32"), DecodedLength: 5}))

	// The canonical value verifies, so the two cases above test only the encoding.
	canonical := "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"
	got, err := io.ReadAll(sigv4.NewChunkedReader(bytes.NewReader([]byte(canonical)),
		&sigv4.ChunkedConfig{Trailer: []byte("x-amz-checksum-crc32"), DecodedLength: 5}))
	if err != nil || string(got) != "hello" {
		t.Fatalf("canonical trailer: %q, %v", got, err)
	}
}
