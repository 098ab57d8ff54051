package sigv4

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// readPatterns reads r to the end in several ways a consumer might.
var readPatterns = map[string]func(io.Reader) ([]byte, error){
	"ReadAll": io.ReadAll,
	"OneByte": func(r io.Reader) ([]byte, error) { return io.ReadAll(iotest.OneByteReader(r)) },
	"Half":    func(r io.Reader) ([]byte, error) { return io.ReadAll(iotest.HalfReader(r)) },
	"Buf2": func(r io.Reader) ([]byte, error) {
		var out bytes.Buffer
		_, err := io.CopyBuffer(&out, struct{ io.Reader }{r}, make([]byte, 2))
		return out.Bytes(), err
	},
}

// wirePatterns deliver a body the way a network might.
var wirePatterns = map[string]func([]byte) io.Reader{
	"plain":   func(b []byte) io.Reader { return bytes.NewReader(b) },
	"onebyte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	"dataerr": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
	"zeros":   func(b []byte) io.Reader { return &zeroReads{r: bytes.NewReader(b)} },
}

func TestSHA256Reader(t *testing.T) {
	body := []byte("The quick brown fox jumps over the lazy dog")
	want := sha256.Sum256(body)
	tests := []struct {
		name   string
		wire   []byte
		want   [32]byte
		length int64
		code   ErrorCode // 0: success
	}{
		{"match", body, want, int64(len(body)), 0},
		{"match, length unknown", body, want, -1, 0},
		{"empty", nil, sha256.Sum256(nil), 0, 0},
		{"empty, length unknown", nil, sha256.Sum256(nil), -1, 0},
		{"one byte", []byte{'x'}, sha256.Sum256([]byte{'x'}), 1, 0},
		{"mismatch", body[:len(body)-1], sha256.Sum256(body[1:]), int64(len(body) - 1), ErrXAmzContentSHA256Mismatch},
		{"last byte changed", append(bytes.Clone(body[:len(body)-1]), 'G'), want, int64(len(body)), ErrXAmzContentSHA256Mismatch},
		{"short", body[:10], want, int64(len(body)), ErrIncompleteBody},
		{"long", body, want, int64(len(body) - 1), ErrIncompleteBody},
		{"long, hash of the prefix", body, sha256.Sum256(body[:5]), 5, ErrIncompleteBody},
	}
	for _, tt := range tests {
		for wname, wire := range wirePatterns {
			for rname, read := range readPatterns {
				got, err := read(NewSHA256Reader(wire(tt.wire), tt.want, tt.length))
				if tt.code == 0 {
					if err != nil || !bytes.Equal(got, tt.wire) {
						t.Fatalf("%s/%s/%s: %q, %v", tt.name, wname, rname, got, err)
					}
					continue
				}
				if CodeOf(err) != tt.code {
					t.Fatalf("%s/%s/%s: error %v, want %v", tt.name, wname, rname, err, tt.code)
				}
				if len(got) >= len(tt.wire) {
					t.Fatalf("%s/%s/%s: released %d of %d bytes", tt.name, wname, rname, len(got), len(tt.wire))
				}
			}
		}
	}
}

func TestSHA256ReaderTruncation(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 50)
	want := sha256.Sum256(body)
	for n := range len(body) {
		for _, length := range []int64{int64(len(body)), -1} {
			got, err := io.ReadAll(NewSHA256Reader(bytes.NewReader(body[:n]), want, length))
			if err == nil || len(got) >= len(body) {
				t.Fatalf("prefix %d, length %d: %d bytes, %v", n, length, len(got), err)
			}
		}
	}
}

func TestSHA256ReaderErrors(t *testing.T) {
	body := []byte("hello")
	cause := errors.New("reset by peer")
	r := NewSHA256Reader(&failAfter{bytes.NewReader(body), cause}, sha256.Sum256(body), -1)
	got, err := io.ReadAll(r)
	if CodeOf(err) != ErrIncompleteBody || !errors.Is(err, cause) || len(got) >= len(body) {
		t.Fatalf("%q, %v", got, err)
	}
	if n, err2 := r.Read(make([]byte, 4)); n != 0 || err2 != err {
		t.Fatalf("not sticky: %d, %v", n, err2)
	}
	_, err = io.ReadAll(NewSHA256Reader(neverReader{}, sha256.Sum256(nil), -1))
	if !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("no progress: %v", err)
	}
	// An empty p reads nothing and does not fail.
	r = NewSHA256Reader(bytes.NewReader(body), sha256.Sum256(body), 5)
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

func TestChecksumReader(t *testing.T) {
	body := []byte("hello world")
	md5sum := md5.Sum(body)
	tests := []struct {
		name string
		alg  ChecksumAlgorithm
		want string
		wire []byte
		code ErrorCode
	}{
		{"crc32", ChecksumCRC32, "DUoRhQ==", body, 0},
		{"crc32c", ChecksumCRC32C, "yZRlqg==", body, 0},
		{"crc64nvme", ChecksumCRC64NVME, "jSnVw/bqjr4=", body, 0},
		{"sha1", ChecksumSHA1, "Kq5sNclPz7QV2+lfQIuc6R7oRu0=", body, 0},
		{"sha256", ChecksumSHA256, "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=", body, 0},
		{"md5", ChecksumMD5, base64.StdEncoding.EncodeToString(md5sum[:]), body, 0},
		{"whitespace around value", ChecksumCRC32, " DUoRhQ== ", body, 0},
		{"crc32 mismatch", ChecksumCRC32, "DUoRhQ==", []byte("hello worle"), ErrBadDigest},
		{"crc32c of other body", ChecksumCRC32C, "yZRlqg==", []byte("hello"), ErrBadDigest},
		{"md5 mismatch", ChecksumMD5, base64.StdEncoding.EncodeToString(md5sum[:]), []byte("hello"), ErrBadDigest},
		{"crc32 malformed", ChecksumCRC32, "DUoRhQ=", body, ErrInvalidRequest},
		{"sha256 wrong size", ChecksumSHA256, "DUoRhQ==", body, ErrInvalidRequest},
		{"md5 malformed", ChecksumMD5, "not base64", body, ErrInvalidDigest},
		{"md5 empty", ChecksumMD5, "", body, ErrInvalidDigest},
		{"no algorithm", 0, "DUoRhQ==", body, ErrInvalidRequest},
	}
	for _, tt := range tests {
		for wname, wire := range wirePatterns {
			for rname, read := range readPatterns {
				got, err := read(NewChecksumReader(wire(tt.wire), tt.alg, []byte(tt.want)))
				if tt.code == 0 {
					if err != nil || !bytes.Equal(got, tt.wire) {
						t.Fatalf("%s/%s/%s: %q, %v", tt.name, wname, rname, got, err)
					}
					continue
				}
				if CodeOf(err) != tt.code || len(got) >= len(tt.wire) {
					t.Fatalf("%s/%s/%s: %d bytes, %v; want %v", tt.name, wname, rname, len(got), err, tt.code)
				}
			}
		}
	}
	// S3's message names the algorithm.
	_, err := io.ReadAll(NewChecksumReader(bytes.NewReader(body), ChecksumCRC32, []byte("AAAAAA==")))
	var e *Error
	if !errors.As(err, &e) || e.Message != "The CRC32 you specified did not match the calculated checksum." {
		t.Fatalf("message: %v", err)
	}
}

// want is decoded at construction, so the caller may reuse its buffer.
func TestChecksumReaderCopiesWant(t *testing.T) {
	want := []byte("DUoRhQ==")
	r := NewChecksumReader(bytes.NewReader([]byte("hello world")), ChecksumCRC32, want)
	copy(want, "AAAAAA==")
	if got, err := io.ReadAll(r); err != nil || string(got) != "hello world" {
		t.Fatalf("%q, %v", got, err)
	}
}

// Readers stack: a checksum header on an aws-chunked body.
func TestChecksumReaderOverChunked(t *testing.T) {
	payload := repeatA(70000)
	b := buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{65536}})
	want := base64.StdEncoding.EncodeToString(refHash(ChecksumCRC32, payload))
	got, err := io.ReadAll(NewChecksumReader(NewChunkedReader(bytes.NewReader(b.wire), b.cfg), ChecksumCRC32, []byte(want)))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	got, err = io.ReadAll(NewChecksumReader(NewChunkedReader(bytes.NewReader(b.wire), b.cfg), ChecksumCRC32, []byte("AAAAAA==")))
	if CodeOf(err) != ErrBadDigest || len(got) >= len(payload) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
}
