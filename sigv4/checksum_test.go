package sigv4

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

func TestChecksumKnownValues(t *testing.T) {
	tests := []struct {
		alg   ChecksumAlgorithm
		input string
		hex   string // digest as hex, or "" to use b64
		b64   string
	}{
		// CRC catalogue check values (reveng.sourceforge.io).
		{ChecksumCRC32, "123456789", "cbf43926", ""},
		{ChecksumCRC32C, "123456789", "e3069283", ""},
		{ChecksumCRC64NVME, "123456789", "ae8b14860a799888", ""},
		{ChecksumSHA1, "abc", "a9993e364706816aba3e25717850c26c9cd0d89d", ""},
		{ChecksumSHA256, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ""},
		{ChecksumMD5, "", "d41d8cd98f00b204e9800998ecf8427e", ""},
		// aws-sdk-go-v2 service/internal/checksum test expectations for "hello world".
		{ChecksumCRC32, "hello world", "", "DUoRhQ=="},
		{ChecksumCRC32C, "hello world", "", "yZRlqg=="},
		{ChecksumCRC64NVME, "hello world", "", "jSnVw/bqjr4="},
		{ChecksumSHA1, "hello world", "", "Kq5sNclPz7QV2+lfQIuc6R7oRu0="},
		{ChecksumSHA256, "hello world", "", "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek="},
		// The crc32c trailer of the AWS streaming example (66560 × 'a').
		{ChecksumCRC32C, string(repeatA(66560)), "", "sOO8/Q=="},
	}
	for _, tt := range tests {
		h := tt.alg.New()
		h.Write([]byte(tt.input))
		sum := h.Sum(nil)
		if len(sum) != tt.alg.Size() || h.Size() != tt.alg.Size() {
			t.Errorf("%s: digest of %d bytes, Size %d", tt.alg, len(sum), tt.alg.Size())
		}
		if tt.hex != "" && hex.EncodeToString(sum) != tt.hex {
			t.Errorf("%s(%.20q) = %x, want %s", tt.alg, tt.input, sum, tt.hex)
		}
		if tt.b64 != "" && base64.StdEncoding.EncodeToString(sum) != tt.b64 {
			t.Errorf("%s(%.20q) = %s, want %s", tt.alg, tt.input, base64.StdEncoding.EncodeToString(sum), tt.b64)
		}
	}
}

// The slicing-by-8 CRC-64/NVME agrees with hash/crc64 for every length and
// split of the input.
func TestCRC64NVMEMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for n := range 300 {
		for _, split := range []int{0, 1, 7, 8, 9, n / 2} {
			if split > n {
				continue
			}
			h := ChecksumCRC64NVME.New()
			h.Write(data[:split])
			h.Write(data[split:n])
			if got, want := h.Sum(nil), refHash(ChecksumCRC64NVME, data[:n]); !bytes.Equal(got, want) {
				t.Fatalf("len %d split %d: %x, want %x", n, split, got, want)
			}
		}
	}
	h := ChecksumCRC64NVME.New()
	h.Write(data)
	if !bytes.Equal(h.Sum(nil), refHash(ChecksumCRC64NVME, data)) {
		t.Fatal("5000 bytes differ")
	}
	h.Reset()
	if got := h.Sum(nil); !bytes.Equal(got, make([]byte, 8)) {
		t.Fatalf("after Reset: %x", got)
	}
}

func TestParseChecksumAlgorithm(t *testing.T) {
	tests := []struct {
		name string
		alg  ChecksumAlgorithm
		ok   bool
	}{
		{"x-amz-checksum-crc32", ChecksumCRC32, true},
		{"X-Amz-Checksum-CRC32C", ChecksumCRC32C, true},
		{" x-amz-checksum-crc64nvme\t", ChecksumCRC64NVME, true},
		{"x-amz-checksum-sha1", ChecksumSHA1, true},
		{"x-amz-checksum-sha256", ChecksumSHA256, true},
		{"Content-MD5", ChecksumMD5, true},
		{"CRC32", ChecksumCRC32, true},
		{"crc32c", ChecksumCRC32C, true},
		{"CRC64NVME", ChecksumCRC64NVME, true},
		{"SHA1", ChecksumSHA1, true},
		{"SHA256", ChecksumSHA256, true},
		{"MD5", ChecksumMD5, true},
		{"", 0, false},
		{"x-amz-checksum-md5", 0, false},
		{"x-amz-checksum-sha512", 0, false},
		{"x-amz-checksum-crc32c,x-amz-checksum-crc32", 0, false},
		{"x-amz-checksum-", 0, false},
		{"crc", 0, false},
	}
	for _, tt := range tests {
		alg, ok := ParseChecksumAlgorithm([]byte(tt.name))
		if alg != tt.alg || ok != tt.ok {
			t.Errorf("ParseChecksumAlgorithm(%q) = %v, %v; want %v, %v", tt.name, alg, ok, tt.alg, tt.ok)
		}
		if ok && alg.String() != "" {
			if back, ok2 := ParseChecksumAlgorithm([]byte(alg.HeaderName())); back != alg || !ok2 {
				t.Errorf("%v: HeaderName %q does not parse back", alg, alg.HeaderName())
			}
		}
	}
	var bad ChecksumAlgorithm
	if bad.New() != nil || bad.Size() != 0 || bad.HeaderName() != "" || bad.String() == "" {
		t.Error("the zero ChecksumAlgorithm must be invalid")
	}
}

func TestDecodeChecksum(t *testing.T) {
	tests := []struct {
		alg   ChecksumAlgorithm
		value string
		ok    bool
	}{
		{ChecksumCRC32, "DUoRhQ==", true},
		{ChecksumCRC32, "DUoRhQ=", false},
		{ChecksumCRC32, "DUoRhQ", false},
		{ChecksumCRC32, "DUoRhQA=", false}, // 5 bytes
		{ChecksumCRC32, "DUo\nRhQ==", false},
		{ChecksumCRC32, "DUoR\r\n==", false},
		{ChecksumCRC32, "DUoRh!==", false},
		{ChecksumCRC32C, "yZRlqg==", true},
		{ChecksumCRC64NVME, "jSnVw/bqjr4=", true},
		{ChecksumCRC64NVME, "yZRlqg==", false},
		{ChecksumSHA1, "Kq5sNclPz7QV2+lfQIuc6R7oRu0=", true},
		{ChecksumSHA256, "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=", true},
		{ChecksumSHA256, "uU0nuZNNPgilLlLX2n2r-sSE7-N6U4DukIj3rOLvzek=", false}, // URL alphabet
		{ChecksumMD5, "XrY7u+Ae7tCTyyK7j1rNww==", true},
		{0, "", false},
	}
	for _, tt := range tests {
		var dst [maxChecksumSize + 3]byte
		if ok := decodeChecksum(&dst, tt.alg, []byte(tt.value)); ok != tt.ok {
			t.Errorf("decodeChecksum(%v, %q) = %v, want %v", tt.alg, tt.value, ok, tt.ok)
		}
	}
}
