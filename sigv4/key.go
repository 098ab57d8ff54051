package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Algorithm names and literal payload hashes used on the wire.
const (
	Algorithm                    = "AWS4-HMAC-SHA256"
	AlgorithmECDSA               = "AWS4-ECDSA-P256-SHA256"
	UnsignedPayload              = "UNSIGNED-PAYLOAD"
	StreamingPayload             = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingPayloadTrailer      = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedTrailer     = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	StreamingECDSAPayload        = "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"
	StreamingECDSAPayloadTrailer = "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER"
	emptySHA256Hex               = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	scopeTerminator              = "aws4_request"
	amzDateLayout                = "20060102T150405Z"
	chunkStringToSignPrefix      = "AWS4-HMAC-SHA256-PAYLOAD"
	trailerStringToSignPrefix    = "AWS4-HMAC-SHA256-TRAILER"
)

// DeriveSigningKey computes the SigV4 signing key
// HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request")
// into dst. date is yyyymmdd.
func DeriveSigningKey(dst *[32]byte, secret, date, region, service []byte) {
	var k [32]byte
	buf := make([]byte, 0, 4+len(secret))
	buf = append(buf, "AWS4"...)
	buf = append(buf, secret...)
	h := hmac.New(sha256.New, buf)
	h.Write(date)
	h.Sum(k[:0])
	h = hmac.New(sha256.New, k[:])
	h.Write(region)
	h.Sum(k[:0])
	h = hmac.New(sha256.New, k[:])
	h.Write(service)
	h.Sum(k[:0])
	h = hmac.New(sha256.New, k[:])
	h.Write([]byte(scopeTerminator))
	h.Sum(dst[:0])
}
