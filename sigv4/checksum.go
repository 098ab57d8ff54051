package sigv4

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"hash/crc64"
)

// ChecksumAlgorithm is one of the S3 flexible checksum algorithms, or MD5 for
// Content-MD5.
type ChecksumAlgorithm uint8

// The checksum algorithms S3 accepts in x-amz-checksum-* headers and
// aws-chunked trailers, plus MD5 for the Content-MD5 header.
const (
	ChecksumCRC32 ChecksumAlgorithm = iota + 1
	ChecksumCRC32C
	ChecksumCRC64NVME
	ChecksumSHA1
	ChecksumSHA256
	ChecksumMD5
	checksumEnd
)

var checksumInfo = [checksumEnd]struct {
	name, header string
	size         int
}{
	ChecksumCRC32:     {"CRC32", "x-amz-checksum-crc32", crc32.Size},
	ChecksumCRC32C:    {"CRC32C", "x-amz-checksum-crc32c", crc32.Size},
	ChecksumCRC64NVME: {"CRC64NVME", "x-amz-checksum-crc64nvme", crc64.Size},
	ChecksumSHA1:      {"SHA1", "x-amz-checksum-sha1", sha1.Size},
	ChecksumSHA256:    {"SHA256", "x-amz-checksum-sha256", sha256.Size},
	ChecksumMD5:       {"MD5", "content-md5", md5.Size},
}

// maxChecksumSize is the largest digest of any ChecksumAlgorithm.
const maxChecksumSize = sha256.Size

// ParseChecksumAlgorithm recognises a checksum by its header name
// ("x-amz-checksum-crc32c", "content-md5") or by its algorithm name as sent in
// x-amz-sdk-checksum-algorithm ("CRC32C", "MD5"). Case and surrounding
// whitespace are ignored.
func ParseChecksumAlgorithm(name []byte) (ChecksumAlgorithm, bool) {
	name = trimOWS(name)
	for a := ChecksumCRC32; a < checksumEnd; a++ {
		if foldEqual(name, checksumInfo[a].header) || foldEqual(name, checksumInfo[a].name) {
			return a, true
		}
	}
	return 0, false
}

func (a ChecksumAlgorithm) valid() bool { return a >= ChecksumCRC32 && a < checksumEnd }

// String returns the algorithm name as S3 spells it, e.g. "CRC32C".
func (a ChecksumAlgorithm) String() string {
	if !a.valid() {
		return "ChecksumAlgorithm(invalid)"
	}
	return checksumInfo[a].name
}

// HeaderName returns the lower-case header (and trailer) that carries the
// checksum, e.g. "x-amz-checksum-crc32c" or "content-md5".
func (a ChecksumAlgorithm) HeaderName() string {
	if !a.valid() {
		return ""
	}
	return checksumInfo[a].header
}

// Size returns the length of the binary digest in bytes (0 if a is invalid).
func (a ChecksumAlgorithm) Size() int {
	if !a.valid() {
		return 0
	}
	return checksumInfo[a].size
}

// encodedSize returns the length of the base64 form of the digest.
func (a ChecksumAlgorithm) encodedSize() int { return base64.StdEncoding.EncodedLen(a.Size()) }

// New returns a hash computing the checksum. Sum appends the digest in the
// byte order S3 base64-encodes (big-endian for the CRCs). It returns nil if a
// is invalid.
func (a ChecksumAlgorithm) New() hash.Hash {
	switch a {
	case ChecksumCRC32:
		return crc32.NewIEEE()
	case ChecksumCRC32C:
		return crc32.New(castagnoliTable)
	case ChecksumCRC64NVME:
		return new(crc64NVME)
	case ChecksumSHA1:
		return sha1.New()
	case ChecksumSHA256:
		return sha256.New()
	case ChecksumMD5:
		return md5.New()
	}
	return nil
}

// decodeChecksum decodes the base64 value of a checksum of algorithm a into
// dst and reports whether it is well-formed: canonical padded base64 of
// exactly a.Size() bytes.
func decodeChecksum(dst *[maxChecksumSize + 3]byte, a ChecksumAlgorithm, value []byte) bool {
	if !a.valid() || len(value) != a.encodedSize() {
		return false
	}
	for _, c := range value {
		// StdEncoding skips CR and LF; a checksum value never contains them.
		if c == '\r' || c == '\n' {
			return false
		}
	}
	n, err := strictBase64.Decode(dst[:], value)
	return err == nil && n == a.Size()
}

// strictBase64 refuses non-zero padding bits, so each checksum has exactly
// one accepted spelling.
var strictBase64 = base64.StdEncoding.Strict()

// castagnoliTable is immutable once built; crc32 recognises it and uses the
// SSE4.2/ARMv8 instructions.
var castagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// crc64NVMEPoly is the CRC-64/NVME polynomial in reversed (LSB-first) form.
const crc64NVMEPoly = 0x9a6c9329ac4bc9b5

// crc64NVMESlicing holds slicing-by-8 tables for CRC-64/NVME. hash/crc64 only
// keeps slicing tables for ISO and ECMA and rebuilds them (16 KiB) on every
// large update for any other polynomial, so this package keeps its own,
// built once and never written afterwards.
var crc64NVMESlicing = makeCRC64Slicing(crc64.MakeTable(crc64NVMEPoly))

func makeCRC64Slicing(t *crc64.Table) *[8][256]uint64 {
	var s [8][256]uint64
	s[0] = *t
	for i := range 256 {
		crc := t[i]
		for j := 1; j < 8; j++ {
			crc = t[crc&0xff] ^ crc>>8
			s[j][i] = crc
		}
	}
	return &s
}

func updateCRC64NVME(crc uint64, p []byte) uint64 {
	t := crc64NVMESlicing
	crc = ^crc
	for len(p) >= 8 {
		crc ^= uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
			uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
		crc = t[7][crc&0xff] ^ t[6][crc>>8&0xff] ^ t[5][crc>>16&0xff] ^ t[4][crc>>24&0xff] ^
			t[3][crc>>32&0xff] ^ t[2][crc>>40&0xff] ^ t[1][crc>>48&0xff] ^ t[0][crc>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return ^crc
}

// crc64NVME is a hash.Hash64 for CRC-64/NVME (check value 0xae8b14860a799888).
type crc64NVME struct{ crc uint64 }

func (d *crc64NVME) Write(p []byte) (int, error) {
	d.crc = updateCRC64NVME(d.crc, p)
	return len(p), nil
}

func (d *crc64NVME) Sum(b []byte) []byte {
	s := d.crc
	return append(b, byte(s>>56), byte(s>>48), byte(s>>40), byte(s>>32), byte(s>>24), byte(s>>16), byte(s>>8), byte(s))
}

func (d *crc64NVME) Sum64() uint64  { return d.crc }
func (d *crc64NVME) Reset()         { d.crc = 0 }
func (d *crc64NVME) Size() int      { return crc64.Size }
func (d *crc64NVME) BlockSize() int { return 1 }

// checksumSet keeps one hash per algorithm, created on first use and reset
// afterwards, so a reused reader does not allocate on its steady path.
type checksumSet [checksumEnd]hash.Hash

func (s *checksumSet) get(a ChecksumAlgorithm) hash.Hash {
	h := s[a]
	if h == nil {
		h = a.New()
		s[a] = h
	} else {
		h.Reset()
	}
	return h
}

func isOWS(c byte) bool { return c == ' ' || c == '\t' }

// trimOWS trims RFC 9110 optional whitespace (SP, HTAB).
func trimOWS(b []byte) []byte {
	for len(b) > 0 && isOWS(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isOWS(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// foldEqual reports whether b equals the lower-case ASCII string s,
// ignoring ASCII case in b.
func foldEqual(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		d := s[i]
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
