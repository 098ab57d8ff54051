package sigv4

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

// The parameters of the AWS streaming examples (streaming-vectors.md).
const (
	vecSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	vecAmzDate = "20130524T000000Z"
	vecScope   = "20130524/us-east-1/s3/aws4_request"
)

func vecKey() [32]byte {
	var k [32]byte
	DeriveSigningKey(&k, []byte(vecSecret), []byte("20130524"), []byte("us-east-1"), []byte("s3"))
	return k
}

func mustHex32(t testing.TB, s string) [32]byte {
	t.Helper()
	var a [32]byte
	if n, err := hex.Decode(a[:], []byte(s)); err != nil || n != 32 {
		t.Fatalf("bad hex %q", s)
	}
	return a
}

// refHash computes a checksum with the standard library only, as an
// independent reference for checksum.go.
func refHash(a ChecksumAlgorithm, data []byte) []byte {
	var h hash.Hash
	switch a {
	case ChecksumCRC32:
		h = crc32.NewIEEE()
	case ChecksumCRC32C:
		h = crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case ChecksumCRC64NVME:
		h = crc64.New(crc64.MakeTable(0x9a6c9329ac4bc9b5))
	case ChecksumSHA1:
		h = sha1.New()
	case ChecksumSHA256:
		h = sha256.New()
	case ChecksumMD5:
		h = md5.New()
	}
	h.Write(data)
	return h.Sum(nil)
}

// refSigner signs chunks with crypto/hmac, independently of chunkSigner.
type refSigner struct {
	key        [32]byte
	date, scop string
	prev       string
}

func (s *refSigner) mac(msg string) string {
	m := hmac.New(sha256.New, s.key[:])
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *refSigner) chunk(data []byte) string {
	h := sha256.Sum256(data)
	s.prev = s.mac("AWS4-HMAC-SHA256-PAYLOAD\n" + s.date + "\n" + s.scop + "\n" + s.prev + "\n" + emptySHA256Hex + "\n" + hex.EncodeToString(h[:]))
	return s.prev
}

func (s *refSigner) trailer(canonical string) string {
	h := sha256.Sum256([]byte(canonical))
	s.prev = s.mac("AWS4-HMAC-SHA256-TRAILER\n" + s.date + "\n" + s.scop + "\n" + s.prev + "\n" + hex.EncodeToString(h[:]))
	return s.prev
}

// chunkStream describes an aws-chunked body for buildStream.
type chunkStream struct {
	signed  bool
	payload []byte
	sizes   []int             // chunk sizes; the rest of payload is one last chunk
	trailer ChecksumAlgorithm // 0: none
	seed    string            // hex seed signature; "" = 64 zeros
}

// builtStream is an encoded stream and where its parts are, for tampering.
type builtStream struct {
	wire  []byte
	cfg   *ChunkedConfig
	marks map[string]int // "data<i>", "sig<i>", "final", "tname", "tvalue", "tsig", "end"
}

// buildStream encodes s in the canonical wire format with refSigner.
func buildStream(t testing.TB, s chunkStream) *builtStream {
	t.Helper()
	seed := s.seed
	if seed == "" {
		seed = strings.Repeat("0", 64)
	}
	sg := &refSigner{key: vecKey(), date: vecAmzDate, scop: vecScope, prev: seed}
	b := &builtStream{marks: map[string]int{}}
	var w bytes.Buffer
	rest := s.payload
	sizes := append([]int(nil), s.sizes...)
	sum := 0
	for _, n := range sizes {
		sum += n
	}
	if len(rest) > sum {
		sizes = append(sizes, len(rest)-sum)
	}
	for i, n := range sizes {
		data := rest[:n]
		rest = rest[n:]
		w.WriteString(strconv.FormatInt(int64(n), 16))
		if s.signed {
			w.WriteString(";chunk-signature=")
			b.marks["sig"+strconv.Itoa(i)] = w.Len()
			w.WriteString(sg.chunk(data))
		}
		w.WriteString("\r\n")
		b.marks["data"+strconv.Itoa(i)] = w.Len()
		w.Write(data)
		w.WriteString("\r\n")
	}
	w.WriteString("0")
	if s.signed {
		w.WriteString(";chunk-signature=")
		b.marks["final"] = w.Len()
		w.WriteString(sg.chunk(nil))
	}
	w.WriteString("\r\n")
	cfg := &ChunkedConfig{
		Signed:        s.signed,
		SigningKey:    vecKey(),
		AmzDate:       []byte(vecAmzDate),
		Scope:         []byte(vecScope),
		SeedSignature: mustHex32(t, seed),
		DecodedLength: int64(len(s.payload)),
	}
	if s.trailer != 0 {
		cfg.Trailer = []byte(s.trailer.HeaderName())
		value := base64.StdEncoding.EncodeToString(refHash(s.trailer, s.payload))
		b.marks["tname"] = w.Len()
		w.WriteString(s.trailer.HeaderName() + ":")
		b.marks["tvalue"] = w.Len()
		w.WriteString(value + "\r\n")
		if s.signed {
			w.WriteString("x-amz-trailer-signature:")
			b.marks["tsig"] = w.Len()
			w.WriteString(sg.trailer(s.trailer.HeaderName() + ":" + value + "\n"))
			w.WriteString("\r\n")
		}
	}
	b.marks["end"] = w.Len()
	w.WriteString("\r\n")
	b.wire, b.cfg = w.Bytes(), cfg
	return b
}

// decodeAll reads r to the end with io.ReadAll (Read path).
func decodeAll(wire io.Reader, cfg *ChunkedConfig) ([]byte, error) {
	return io.ReadAll(struct{ io.Reader }{NewChunkedReader(wire, cfg)})
}

// decodeWriteTo reads r to the end through WriteTo.
func decodeWriteTo(wire io.Reader, cfg *ChunkedConfig) ([]byte, error) {
	var out bytes.Buffer
	_, err := NewChunkedReader(wire, cfg).WriteTo(&out)
	return out.Bytes(), err
}

func repeatA(n int) []byte { return bytes.Repeat([]byte{'a'}, n) }

// The three examples of streaming-vectors.md, built from the signatures given
// there.
func TestChunkedAWSVectors(t *testing.T) {
	payload := repeatA(66560)
	key := vecKey()
	tests := []struct {
		name          string
		seed          string
		sigs          []string // chunk 1, chunk 2, final; nil = unsigned
		trailer       string
		trailerSig    string
		contentLength int
	}{
		{
			name: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
			seed: "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
			sigs: []string{
				"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
				"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
				"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
			},
			contentLength: 66824,
		},
		{
			name: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
			seed: "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
			sigs: []string{
				"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
				"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
				"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
			},
			trailer:    "x-amz-checksum-crc32c:sOO8/Q==",
			trailerSig: "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435",
		},
		{
			name:    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			trailer: "x-amz-checksum-crc32c:sOO8/Q==",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signed := tt.sigs != nil
			var w bytes.Buffer
			chunks := [][]byte{payload[:65536], payload[65536:]}
			for i, c := range chunks {
				w.WriteString(strconv.FormatInt(int64(len(c)), 16))
				if signed {
					w.WriteString(";chunk-signature=" + tt.sigs[i])
				}
				w.WriteString("\r\n")
				w.Write(c)
				w.WriteString("\r\n")
			}
			w.WriteString("0")
			if signed {
				w.WriteString(";chunk-signature=" + tt.sigs[2])
			}
			w.WriteString("\r\n")
			if tt.trailer != "" {
				w.WriteString(tt.trailer + "\r\n")
				if signed {
					w.WriteString("x-amz-trailer-signature:" + tt.trailerSig + "\r\n")
				}
			}
			w.WriteString("\r\n")
			if tt.contentLength != 0 && w.Len() != tt.contentLength {
				t.Fatalf("wire length %d, want content-length %d", w.Len(), tt.contentLength)
			}

			// The documented signatures chain as the reference signer says.
			if signed {
				ref := &refSigner{key: key, date: vecAmzDate, scop: vecScope, prev: tt.seed}
				for i, c := range append(chunks, nil) {
					if got := ref.chunk(c); got != tt.sigs[i] {
						t.Fatalf("chunk %d: reference signature %s, document %s", i, got, tt.sigs[i])
					}
				}
				if tt.trailerSig != "" {
					if got := ref.trailer(tt.trailer + "\n"); got != tt.trailerSig {
						t.Fatalf("reference trailer signature %s, document %s", got, tt.trailerSig)
					}
				}
			}
			if tt.trailer != "" {
				crc := base64.StdEncoding.EncodeToString(refHash(ChecksumCRC32C, payload))
				if want := "x-amz-checksum-crc32c:" + crc; tt.trailer != want {
					t.Fatalf("document trailer %q, computed %q", tt.trailer, want)
				}
			}

			cfg := &ChunkedConfig{
				Signed:        signed,
				SigningKey:    key,
				AmzDate:       []byte(vecAmzDate),
				Scope:         []byte(vecScope),
				DecodedLength: int64(len(payload)),
			}
			if signed {
				cfg.SeedSignature = mustHex32(t, tt.seed)
			}
			if tt.trailer != "" {
				cfg.Trailer = []byte("x-amz-checksum-crc32c")
			}
			for _, decode := range []func(io.Reader, *ChunkedConfig) ([]byte, error){decodeAll, decodeWriteTo} {
				got, err := decode(bytes.NewReader(w.Bytes()), cfg)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if !bytes.Equal(got, payload) {
					t.Fatalf("decoded %d bytes, want %d bytes of 'a'", len(got), len(payload))
				}
			}
			r := NewChunkedReader(bytes.NewReader(w.Bytes()), cfg)
			if name, value := r.Checksum(); name != nil || value != nil {
				t.Fatalf("Checksum before EOF = %q, %q", name, value)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			name, value := r.Checksum()
			if tt.trailer == "" {
				if name != nil || value != nil {
					t.Fatalf("Checksum without trailer = %q, %q", name, value)
				}
			} else if got := string(name) + ":" + string(value); got != tt.trailer {
				t.Fatalf("Checksum = %q, want %q", got, tt.trailer)
			}
			// A wrong key fails the first chunk.
			if signed {
				bad := *cfg
				bad.SigningKey[0] ^= 1
				got, err := decodeAll(bytes.NewReader(w.Bytes()), &bad)
				if CodeOf(err) != ErrSignatureDoesNotMatch || len(got) != 0 {
					t.Fatalf("wrong key: %d bytes, %v", len(got), err)
				}
			}
		})
	}
}

var allTrailerAlgorithms = []ChecksumAlgorithm{ChecksumCRC32, ChecksumCRC32C, ChecksumCRC64NVME, ChecksumSHA1, ChecksumSHA256}

func TestChunkedTrailerAlgorithms(t *testing.T) {
	payload := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 300))
	for _, a := range allTrailerAlgorithms {
		for _, signed := range []bool{true, false} {
			t.Run(a.String()+"/signed="+strconv.FormatBool(signed), func(t *testing.T) {
				b := buildStream(t, chunkStream{signed: signed, payload: payload, sizes: []int{8192}, trailer: a})
				for _, decode := range []func(io.Reader, *ChunkedConfig) ([]byte, error){decodeAll, decodeWriteTo} {
					got, err := decode(bytes.NewReader(b.wire), b.cfg)
					if err != nil || !bytes.Equal(got, payload) {
						t.Fatalf("decode: %d bytes, %v", len(got), err)
					}
				}
				r := NewChunkedReader(bytes.NewReader(b.wire), b.cfg)
				io.Copy(io.Discard, r)
				name, value := r.Checksum()
				if string(name) != a.HeaderName() || string(value) != base64.StdEncoding.EncodeToString(refHash(a, payload)) {
					t.Fatalf("Checksum = %q %q", name, value)
				}
				// Another algorithm's correct checksum is still a mismatch of the declared one.
				for _, other := range allTrailerAlgorithms {
					if other == a {
						continue
					}
					cfg := *b.cfg
					cfg.Trailer = []byte(other.HeaderName())
					got, err := decodeAll(bytes.NewReader(b.wire), &cfg)
					if CodeOf(err) != ErrMalformedTrailer || len(got) >= len(payload) {
						t.Fatalf("declared %s, sent %s: %d bytes, %v", other, a, len(got), err)
					}
				}
			})
		}
	}
}

// flipByte returns a copy of wire with the byte at i changed to another
// character of the same class, so the framing stays well-formed.
func flipByte(wire []byte, i int) []byte {
	w := bytes.Clone(wire)
	switch c := w[i]; {
	case c == '0':
		w[i] = '1'
	case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		w[i] = '0'
	case c == 'A':
		w[i] = 'B'
	default:
		w[i] = 'A'
	}
	return w
}

func replaceAt(wire []byte, i int, old, repl string) []byte {
	if string(wire[i:i+len(old)]) != old {
		panic("replaceAt: " + strconv.Quote(string(wire[i:i+len(old)])) + " is not " + strconv.Quote(old))
	}
	return append(append(bytes.Clone(wire[:i]), repl...), wire[i+len(old):]...)
}

func TestChunkedTampering(t *testing.T) {
	payload := make([]byte, 20000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	signedTrailer := func(t *testing.T) *builtStream {
		return buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{8192, 8192}, trailer: ChecksumCRC32C})
	}
	unsignedTrailer := func(t *testing.T) *builtStream {
		return buildStream(t, chunkStream{payload: payload, sizes: []int{8192, 8192}, trailer: ChecksumSHA256})
	}
	tests := []struct {
		name   string
		build  func(*testing.T) *builtStream
		tamper func(b *builtStream) ([]byte, *ChunkedConfig)
		code   ErrorCode
	}{
		{"first chunk data", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["data0"]+100), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"last chunk data", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["data2"]+5), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"middle chunk signature", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["sig1"]+63), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"final chunk signature", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["final"]), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"trailer signature", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["tsig"]+10), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"signed trailer value", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["tvalue"]+1), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"seed signature", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.SeedSignature[31] ^= 0x80
			return b.wire, &cfg
		}, ErrSignatureDoesNotMatch},
		{"amz date", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.AmzDate = []byte("20130524T000001Z")
			return b.wire, &cfg
		}, ErrSignatureDoesNotMatch},
		{"unsigned trailer value", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["tvalue"]+3), b.cfg
		}, ErrBadDigest},
		{"unsigned chunk data", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return flipByte(b.wire, b.marks["data2"]+b.marks["end"]%7), b.cfg
		}, ErrBadDigest},
		{"unsigned last byte", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			i := b.marks["tname"] - len("\r\n0\r\n") - 1
			return flipByte(b.wire, i), b.cfg
		}, ErrBadDigest},
		{"checksum value malformed", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["tvalue"]+43, "=", "!"), b.cfg
		}, ErrInvalidRequest},
		{"trailer of another algorithm", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["tname"], "x-amz-checksum-sha256", "x-amz-checksum-sha1"), b.cfg
		}, ErrMalformedTrailer},
		{"declared trailer missing", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return append(bytes.Clone(b.wire[:b.marks["tname"]]), "\r\n"...), b.cfg
		}, ErrMalformedTrailer},
		{"undeclared trailer", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.Trailer = nil
			return b.wire, &cfg
		}, ErrMalformedTrailer},
		{"repeated trailer", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			line := b.wire[b.marks["tname"]:b.marks["end"]]
			return replaceAt(b.wire, b.marks["tname"], string(line), string(line)+string(line)), b.cfg
		}, ErrMalformedTrailer},
		{"unknown trailer", unsignedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["end"], "\r\n", "x-amz-meta-foo:bar\r\n\r\n"), b.cfg
		}, ErrMalformedTrailer},
		{"trailer signature missing", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			i := b.marks["tsig"] - len("x-amz-trailer-signature:")
			return append(bytes.Clone(b.wire[:i]), "\r\n"...), b.cfg
		}, ErrMalformedTrailer},
		{"trailer signature malformed", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["tsig"], b.marks2(b.wire, "tsig"), "zz"), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"line after trailer signature", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["end"], "\r\n", "x-amz-checksum-crc32c:AAAAAA==\r\n\r\n"), b.cfg
		}, ErrMalformedTrailer},
		{"unsupported x-amz-trailer", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.Trailer = []byte("x-amz-checksum-crc32c,x-amz-meta-a")
			return b.wire, &cfg
		}, ErrInvalidRequest},
		{"chunk signature missing", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			i := b.marks["sig1"] - len(";chunk-signature=")
			return replaceAt(b.wire, i, string(b.wire[i:b.marks["sig1"]+64]), ""), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"chunk signature short", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["sig0"]+62, string(b.wire[b.marks["sig0"]+62:b.marks["sig0"]+64]), ""), b.cfg
		}, ErrSignatureDoesNotMatch},
		{"chunk signature twice", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			sig := string(b.wire[b.marks["sig0"] : b.marks["sig0"]+64])
			return replaceAt(b.wire, b.marks["sig0"], sig, sig+";chunk-signature="+sig), b.cfg
		}, ErrInvalidChunkSize},
		{"chunks swapped size", signedTrailer, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, 0, "2000", "1fff"), b.cfg
		}, ErrInvalidChunkSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.build(t)
			if got, err := decodeAll(bytes.NewReader(b.wire), b.cfg); err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("untampered stream: %d bytes, %v", len(got), err)
			}
			wire, cfg := tt.tamper(b)
			for _, decode := range []func(io.Reader, *ChunkedConfig) ([]byte, error){decodeAll, decodeWriteTo} {
				got, err := decode(bytes.NewReader(wire), cfg)
				if CodeOf(err) != tt.code {
					t.Fatalf("error %v, want %v", err, tt.code)
				}
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("error %T is not an *Error", err)
				}
				if len(got) >= len(payload) {
					t.Fatalf("consumer received %d of %d payload bytes", len(got), len(payload))
				}
			}
		})
	}
}

// marks2 returns the 64 hex digits of the signature at mark.
func (b *builtStream) marks2(wire []byte, mark string) string {
	return string(wire[b.marks[mark] : b.marks[mark]+64])
}

// Every proper prefix of a stream must fail, and its consumer must never have
// received the whole payload.
func TestChunkedTruncation(t *testing.T) {
	payload := []byte("0123456789abcdefghijklmnopqrstuvwxyz-the-end")
	streams := map[string]*builtStream{
		"signed":           buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{10, 20}}),
		"signed+trailer":   buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{10, 20}, trailer: ChecksumCRC32}),
		"unsigned+trailer": buildStream(t, chunkStream{payload: payload, sizes: []int{10, 20}, trailer: ChecksumCRC64NVME}),
	}
	for name, b := range streams {
		t.Run(name, func(t *testing.T) {
			for _, nolen := range []bool{false, true} {
				cfg := *b.cfg
				if nolen {
					cfg.DecodedLength = -1
				}
				for n := range len(b.wire) {
					for _, wrap := range []func(io.Reader) io.Reader{
						func(r io.Reader) io.Reader { return r },
						iotest.OneByteReader,
						iotest.DataErrReader,
					} {
						got, err := decodeAll(wrap(bytes.NewReader(b.wire[:n])), &cfg)
						if CodeOf(err) != ErrIncompleteBody {
							t.Fatalf("prefix of %d/%d bytes: error %v, want IncompleteBody", n, len(b.wire), err)
						}
						if len(got) >= len(payload) {
							t.Fatalf("prefix of %d bytes: consumer received all %d payload bytes (%v)", n, len(got), err)
						}
					}
				}
				got, err := decodeAll(iotest.OneByteReader(bytes.NewReader(b.wire)), &cfg)
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("whole stream: %q, %v", got, err)
				}
			}
		})
	}
}

// failAfter fails with err once its data is consumed, like a dropped connection.
type failAfter struct {
	r   io.Reader
	err error
}

func (e *failAfter) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		err = e.err
	}
	return n, err
}

func TestChunkedBodyReadError(t *testing.T) {
	payload := repeatA(30000)
	b := buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{10000}})
	cause := errors.New("connection reset")
	r := NewChunkedReader(&failAfter{bytes.NewReader(b.wire[:len(b.wire)-1]), cause}, b.cfg)
	got, err := io.ReadAll(r)
	if CodeOf(err) != ErrIncompleteBody || !errors.Is(err, cause) {
		t.Fatalf("error %v: want IncompleteBody wrapping the cause", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != ErrIncompleteBody {
		t.Fatalf("errors.As *Error: %v", e)
	}
	if len(got) >= len(payload) {
		t.Fatalf("received %d bytes", len(got))
	}
	// The error is sticky.
	for range 3 {
		if n, err2 := r.Read(make([]byte, 10)); n != 0 || err2 != err {
			t.Fatalf("Read after error = %d, %v", n, err2)
		}
	}
}

// io.Copy from a stream whose end is bad delivers strictly fewer bytes than
// the payload, then the error.
func TestChunkedHoldBack(t *testing.T) {
	payload := make([]byte, 3*65536+100)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, signed := range []bool{true, false} {
		b := buildStream(t, chunkStream{signed: signed, payload: payload, sizes: []int{65536, 65536, 65536}, trailer: ChecksumCRC32C})
		bad := flipByte(b.wire, b.marks["tvalue"]+2)
		for _, copyFn := range []func(io.Writer, io.Reader) (int64, error){
			io.Copy,
			func(w io.Writer, r io.Reader) (int64, error) { return io.Copy(w, struct{ io.Reader }{r}) },
			func(w io.Writer, r io.Reader) (int64, error) {
				return io.CopyBuffer(w, struct{ io.Reader }{r}, make([]byte, 7))
			},
		} {
			var out bytes.Buffer
			n, err := copyFn(&out, NewChunkedReader(bytes.NewReader(bad), b.cfg))
			if err == nil || n >= int64(len(payload)) || out.Len() >= len(payload) {
				t.Fatalf("signed=%v: copied %d of %d bytes, err %v", signed, n, len(payload), err)
			}
			if !bytes.Equal(out.Bytes(), payload[:out.Len()]) {
				t.Fatalf("signed=%v: delivered bytes differ from the payload", signed)
			}
			want := ErrSignatureDoesNotMatch
			if !signed {
				want = ErrBadDigest
			}
			if CodeOf(err) != want {
				t.Fatalf("signed=%v: error %v, want %v", signed, err, want)
			}
		}
	}
}

func TestChunkedLimits(t *testing.T) {
	payload := repeatA(5000)
	signed := func(t *testing.T) *builtStream {
		return buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{3000}})
	}
	unsigned := func(t *testing.T) *builtStream {
		return buildStream(t, chunkStream{payload: payload, sizes: []int{3000}, trailer: ChecksumCRC32})
	}
	tests := []struct {
		name   string
		build  func(*testing.T) *builtStream
		tamper func(b *builtStream) ([]byte, *ChunkedConfig)
		code   ErrorCode // 0: must succeed
	}{
		{"chunk above MaxChunkSize", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.MaxChunkSize = 2999
			return b.wire, &cfg
		}, ErrInvalidChunkSize},
		{"chunk at MaxChunkSize", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.MaxChunkSize = 3000
			return b.wire, &cfg
		}, 0},
		{"unsigned chunks are not limited", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.MaxChunkSize = 100
			return b.wire, &cfg
		}, 0},
		{"decoded length larger", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.DecodedLength++
			return b.wire, &cfg
		}, ErrIncompleteBody},
		{"decoded length smaller", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.DecodedLength--
			return b.wire, &cfg
		}, ErrInvalidChunkSize},
		{"decoded length smaller unsigned", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.DecodedLength = 2999
			return b.wire, &cfg
		}, ErrInvalidChunkSize},
		{"decoded length unknown", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.DecodedLength = -1
			return b.wire, &cfg
		}, 0},
		{"header line too long", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, 3, ";", ";x="+strings.Repeat("y", 4100)+";"), b.cfg
		}, ErrInvalidChunkSize},
		{"header line at the limit", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			ext := ";x=" + strings.Repeat("y", maxChunkLine-len("bb8;chunk-signature=")-64-3)
			return replaceAt(b.wire, 3, "", ext), b.cfg
		}, 0},
		{"trailer line too long", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, b.marks["tvalue"], "", strings.Repeat(" ", 5000)), b.cfg
		}, ErrInvalidChunkSize},
		{"header line without CRLF at EOF", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return []byte(strings.Repeat("a", 10000)), b.cfg
		}, ErrInvalidChunkSize},
		{"trailing garbage", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return append(bytes.Clone(b.wire), 'x'), b.cfg
		}, ErrMalformedTrailer},
		{"trailing CRLF", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return append(bytes.Clone(b.wire), "\r\n"...), b.cfg
		}, ErrMalformedTrailer},
		{"no data CRLF", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			i := b.marks["data0"] + 3000
			return replaceAt(b.wire, i, "\r\n", "\n"), b.cfg
		}, ErrInvalidChunkSize},
		{"bare LF header", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			i := b.marks["sig0"] + 64
			return replaceAt(b.wire, i, "\r\n", "\n"), b.cfg
		}, ErrInvalidChunkSize},
		{"bad hex size", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, 0, "bb8", "bbg"), b.cfg
		}, ErrInvalidChunkSize},
		{"empty size", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, 0, "bb8", ""), b.cfg
		}, ErrInvalidChunkSize},
		{"negative size", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return replaceAt(b.wire, 0, "bb8", "-bb8"), b.cfg
		}, ErrInvalidChunkSize},
		{"huge size", unsigned, func(b *builtStream) ([]byte, *ChunkedConfig) {
			cfg := *b.cfg
			cfg.DecodedLength = -1
			return replaceAt(b.wire, 0, "bb8", "fffffffffffffffff"), &cfg
		}, ErrInvalidChunkSize},
		{"empty body", signed, func(b *builtStream) ([]byte, *ChunkedConfig) {
			return nil, b.cfg
		}, ErrIncompleteBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire, cfg := tt.tamper(tt.build(t))
			for _, decode := range []func(io.Reader, *ChunkedConfig) ([]byte, error){decodeAll, decodeWriteTo} {
				got, err := decode(bytes.NewReader(wire), cfg)
				if tt.code == 0 {
					if err != nil || !bytes.Equal(got, payload) {
						t.Fatalf("%d bytes, %v", len(got), err)
					}
					continue
				}
				if CodeOf(err) != tt.code {
					t.Fatalf("error %v, want %v", err, tt.code)
				}
				if len(got) >= len(payload) {
					t.Fatalf("consumer received %d of %d bytes", len(got), len(payload))
				}
			}
		})
	}
}

// What real clients send beyond the canonical form.
func TestChunkedClientDialects(t *testing.T) {
	payload := repeatA(9000)
	tests := []struct {
		name   string
		s      chunkStream
		modify func(b *builtStream) []byte
	}{
		{"minio-go signed trailer (LF before CRLF)", chunkStream{signed: true, payload: payload, trailer: ChecksumCRC32C}, func(b *builtStream) []byte {
			return replaceAt(b.wire, b.marks["tvalue"]+8, "\r\n", "\n\r\n")
		}},
		{"minio-go unsigned trailer (LF before CRLF)", chunkStream{payload: payload, trailer: ChecksumCRC32}, func(b *builtStream) []byte {
			return replaceAt(b.wire, b.marks["tvalue"]+8, "\r\n", "\n\r\n")
		}},
		{"whitespace around the colon, upper-case name", chunkStream{signed: true, payload: payload, trailer: ChecksumSHA256}, func(b *builtStream) []byte {
			w := replaceAt(b.wire, b.marks["tname"], "x-amz-checksum-sha256:", "X-Amz-Checksum-SHA256 :  ")
			return bytes.Replace(w, []byte("x-amz-trailer-signature:"), []byte("X-Amz-Trailer-Signature: "), 1)
		}},
		{"spaces in chunk extensions", chunkStream{signed: true, payload: payload, sizes: []int{4000}}, func(b *builtStream) []byte {
			w := replaceAt(b.wire, b.marks["sig0"]-len(";chunk-signature="), ";chunk-signature=", " ; chunk-signature = ")
			return bytes.Replace(w, []byte("\r\n1388;chunk-signature="), []byte("\r\n1388\t;Chunk-Signature="), 1)
		}},
		{"other chunk extensions", chunkStream{signed: true, payload: payload, sizes: []int{4000}}, func(b *builtStream) []byte {
			return replaceAt(b.wire, 0, "fa0;", "FA0;foo;bar=baz;")
		}},
		{"whitespace before CRLF", chunkStream{signed: true, payload: payload}, func(b *builtStream) []byte {
			return replaceAt(b.wire, b.marks["sig0"]+64, "\r\n", " \t\r\n")
		}},
		{"unsigned chunk extensions ignored", chunkStream{payload: payload, trailer: ChecksumCRC32C}, func(b *builtStream) []byte {
			return replaceAt(b.wire, 0, "2328\r\n", "2328;chunk-signature=x\r\n")
		}},
		{"leading zeros in size", chunkStream{payload: payload, trailer: ChecksumCRC32C}, func(b *builtStream) []byte {
			return replaceAt(b.wire, 0, "2328\r\n", "00002328\r\n")
		}},
		{"empty payload", chunkStream{signed: true, payload: nil, trailer: ChecksumCRC32C}, func(b *builtStream) []byte { return b.wire }},
		{"empty payload unsigned", chunkStream{payload: nil, trailer: ChecksumCRC64NVME}, func(b *builtStream) []byte { return b.wire }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildStream(t, tt.s)
			wire := tt.modify(b)
			for _, decode := range []func(io.Reader, *ChunkedConfig) ([]byte, error){decodeAll, decodeWriteTo} {
				got, err := decode(bytes.NewReader(wire), b.cfg)
				if err != nil || !bytes.Equal(got, tt.s.payload) {
					t.Fatalf("%d bytes, %v\nwire tail %q", len(got), err, wire[max(0, len(wire)-200):])
				}
			}
		})
	}
}

// minio-go's own streaming encoders produce bodies the reader accepts.
func TestChunkedMinioGoBodies(t *testing.T) {
	for _, size := range []int{0, 1, 65536, 65537, 200000} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(i % 251)
		}
		for _, mode := range []string{"signed", "signed+trailer", "unsigned+trailer"} {
			t.Run(mode+"/"+strconv.Itoa(size), func(t *testing.T) {
				wire, cfg := minioGoBody(t, mode, payload)
				got, err := decodeAll(iotest.HalfReader(bytes.NewReader(wire)), cfg)
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("%d bytes, %v", len(got), err)
				}
				got, err = decodeAll(bytes.NewReader(flipByte(wire, len(wire)/2)), cfg)
				if err == nil || len(got) >= len(payload) && len(payload) > 0 {
					t.Fatalf("tampered: %d bytes, %v", len(got), err)
				}
			})
		}
	}
}

// Different read patterns on both sides yield the same bytes.
func TestChunkedReadPatterns(t *testing.T) {
	payload := make([]byte, 100000)
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	for _, s := range []chunkStream{
		{signed: true, payload: payload, sizes: []int{1, 2, 65536, 3}, trailer: ChecksumSHA1},
		{payload: payload, sizes: []int{1, 2, 65536, 3}, trailer: ChecksumCRC32C},
		{payload: payload, trailer: ChecksumCRC32C}, // one big chunk
	} {
		b := buildStream(t, s)
		for _, wrap := range []func(io.Reader) io.Reader{
			iotest.OneByteReader, iotest.HalfReader, iotest.DataErrReader,
			func(r io.Reader) io.Reader { return &zeroReads{r: r} },
		} {
			for _, bufSize := range []int{1, 2, 3, 1000, 70000} {
				r := NewChunkedReader(wrap(bytes.NewReader(b.wire)), b.cfg)
				var out []byte
				p := make([]byte, bufSize)
				var err error
				for {
					var n int
					n, err = r.Read(p)
					out = append(out, p[:n]...)
					if err != nil {
						break
					}
				}
				if err != io.EOF || !bytes.Equal(out, payload) {
					t.Fatalf("signed=%v buf=%d: %d bytes, %v", s.signed, bufSize, len(out), err)
				}
			}
		}
	}
}

// zeroReads returns (0, nil) every other call, as io.Reader allows.
type zeroReads struct {
	r io.Reader
	n int
}

func (z *zeroReads) Read(p []byte) (int, error) {
	z.n++
	if z.n%2 == 0 {
		return 0, nil
	}
	return z.r.Read(p)
}

func TestChunkedNoProgress(t *testing.T) {
	b := buildStream(t, chunkStream{signed: true, payload: repeatA(100)})
	r := NewChunkedReader(iotest.ErrReader(iotest.ErrTimeout), b.cfg)
	_, err := io.ReadAll(r)
	if CodeOf(err) != ErrIncompleteBody || !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("error %v", err)
	}
	r.Reset(neverReader{}, b.cfg)
	_, err = io.ReadAll(r)
	if CodeOf(err) != ErrIncompleteBody || !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("error %v", err)
	}
}

type neverReader struct{}

func (neverReader) Read([]byte) (int, error) { return 0, nil }

func TestChunkedResetReuse(t *testing.T) {
	payload := repeatA(200000)
	streams := []*builtStream{
		buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{65536, 65536, 65536}, trailer: ChecksumCRC32C}),
		buildStream(t, chunkStream{payload: payload, sizes: []int{65536, 65536, 65536}, trailer: ChecksumSHA256}),
		buildStream(t, chunkStream{signed: true, payload: payload, sizes: []int{65536, 65536, 65536}}),
	}
	r := NewChunkedReader(bytes.NewReader(nil), streams[0].cfg)
	// A failed stream leaves nothing behind for the next one.
	r.Reset(bytes.NewReader(flipByte(streams[0].wire, 200)), streams[0].cfg)
	if _, err := io.Copy(io.Discard, r); err == nil {
		t.Fatal("tampered stream decoded")
	}
	for _, b := range streams {
		wire := bytes.NewReader(b.wire)
		run := func() {
			wire.Reset(b.wire)
			r.Reset(wire, b.cfg)
			n, err := io.Copy(io.Discard, r)
			if err != nil || n != int64(len(payload)) {
				t.Fatalf("%d bytes, %v", n, err)
			}
		}
		run()
		if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
			t.Errorf("signed=%v trailer=%v: %v allocations per reused decode, want 0", b.cfg.Signed, b.cfg.Trailer != nil, allocs)
		}
	}
}

func TestParseChunkHeader(t *testing.T) {
	sig := strings.Repeat("ab", 32)
	tests := []struct {
		line string
		size int64
		sig  string
		ok   bool
	}{
		{"10000;chunk-signature=" + sig, 65536, sig, true},
		{"0", 0, "", true},
		{"A", 10, "", true},
		{"ff ; chunk-signature = " + sig + " ", 255, sig, true},
		{"1;a;b=c;chunk-signature=" + sig, 1, sig, true},
		{"1;CHUNK-SIGNATURE=" + sig, 1, sig, true},
		{"1;chunk-signature", 1, "", true},
		{"", 0, "", false},
		{";chunk-signature=" + sig, 0, "", false},
		{"1 2", 0, "", false},
		{"1;", 0, "", false},
		{"1;=x", 0, "", false},
		{"1;a=", 0, "", false},
		{"1;a=\"q\"", 0, "", false},
		{"1;chunk-signature=a;chunk-signature=b", 0, "", false},
		{"0x10", 0, "", false},
		{"+1", 0, "", false},
		{"8000000000000000", 0, "", false},
		{"7fffffffffffffff", 1<<63 - 1, "", true},
		{"00000000000000000001", 1, "", true},
	}
	for _, tt := range tests {
		size, gotSig, ok := parseChunkHeader([]byte(tt.line))
		if ok != tt.ok || (ok && (size != tt.size || string(gotSig) != tt.sig)) {
			t.Errorf("parseChunkHeader(%q) = %d, %q, %v; want %d, %q, %v", tt.line, size, gotSig, ok, tt.size, tt.sig, tt.ok)
		}
	}
}

func TestIndexCRLF(t *testing.T) {
	for _, tt := range []struct {
		s string
		i int
	}{
		{"", -1}, {"\r\n", 0}, {"ab\r\n", 2}, {"a\nb\r\n", 3}, {"\n\r\n", 1}, {"a\r", -1}, {"\n\n", -1},
	} {
		if got := indexCRLF([]byte(tt.s)); got != tt.i {
			t.Errorf("indexCRLF(%q) = %d, want %d", tt.s, got, tt.i)
		}
	}
}

// sha256Hasher adapts crypto/sha256 to the md5simd.Hasher minio-go wants.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

// minioGoBody encodes payload with minio-go's streaming signers, as minio-go
// sends it: mode is "signed", "signed+trailer" or "unsigned+trailer".
func minioGoBody(t testing.TB, mode string, payload []byte) ([]byte, *ChunkedConfig) {
	t.Helper()
	when := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	req, err := http.NewRequest(http.MethodPut, "http://127.0.0.1:9000/bucket/key", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(payload))
	cfg := &ChunkedConfig{
		AmzDate:       []byte("20250301T120000Z"),
		Scope:         []byte("20250301/us-east-1/s3/aws4_request"),
		DecodedLength: int64(len(payload)),
	}
	DeriveSigningKey(&cfg.SigningKey, []byte(vecSecret), []byte("20250301"), []byte("us-east-1"), []byte("s3"))
	if strings.HasSuffix(mode, "+trailer") {
		req.Trailer = http.Header{"x-amz-checksum-crc32c": {base64.StdEncoding.EncodeToString(refHash(ChecksumCRC32C, payload))}}
		cfg.Trailer = []byte("x-amz-checksum-crc32c")
	}
	if mode == "unsigned+trailer" {
		req = signer.StreamingUnsignedV4(req, "", int64(len(payload)), when)
	} else {
		cfg.Signed = true
		req = signer.StreamingSignV4(req, "AKIAIOSFODNN7EXAMPLE", vecSecret, "", "us-east-1", int64(len(payload)), when, sha256Hasher{sha256.New()})
		auth := req.Header.Get("Authorization")
		i := strings.Index(auth, "Signature=")
		if i < 0 {
			t.Fatalf("no signature in %q", auth)
		}
		cfg.SeedSignature = mustHex32(t, auth[i+len("Signature="):])
	}
	wire, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	// minio-go declares 0 for an empty payload but still sends the final chunk.
	if len(payload) > 0 && req.ContentLength != int64(len(wire)) {
		t.Fatalf("minio-go content-length %d, body %d bytes", req.ContentLength, len(wire))
	}
	return wire, cfg
}

// clientFixture is an aws-chunked request captured from a real client.
type clientFixture struct {
	Client          string `json:"client"`
	Key             string `json:"key"`
	ContentSHA256   string `json:"x-amz-content-sha256"`
	ContentEncoding string `json:"content-encoding"`
	Trailer         string `json:"x-amz-trailer"`
	DecodedLength   string `json:"x-amz-decoded-content-length"`
	ContentLength   int64  `json:"content-length"`
	// Checksum headers (x-amz-checksum-*, content-md5) sent with a plain body.
	Checksums map[string]string `json:"checksum-headers,omitempty"`
	Body      []byte            `json:"body"`
}

// config returns the decoder configuration the request's headers call for.
// Captures are unsigned (clients send trailers unsigned over TLS).
func (c *clientFixture) config(t testing.TB) *ChunkedConfig {
	t.Helper()
	if c.ContentSHA256 != StreamingUnsignedTrailer || !strings.Contains(c.ContentEncoding, "aws-chunked") {
		t.Fatalf("%s %s: not an unsigned aws-chunked body: %q, %q", c.Client, c.Key, c.ContentSHA256, c.ContentEncoding)
	}
	n, err := strconv.ParseInt(c.DecodedLength, 10, 64)
	if err != nil {
		t.Fatalf("%s %s: x-amz-decoded-content-length %q", c.Client, c.Key, c.DecodedLength)
	}
	return &ChunkedConfig{Trailer: []byte(c.Trailer), DecodedLength: n}
}

// captureServer answers every request 200 and records PUT bodies.
func captureServer(t testing.TB, client string) (*httptest.Server, func() []clientFixture) {
	var mu sync.Mutex
	var got []clientFixture
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodPut {
			sums := map[string]string{}
			for name, v := range r.Header {
				if _, ok := ParseChecksumAlgorithm([]byte(name)); ok && strings.Contains(name, "-") {
					sums[strings.ToLower(name)] = v[0]
				}
			}
			mu.Lock()
			got = append(got, clientFixture{
				Checksums:       sums,
				Client:          client,
				Key:             path.Base(r.URL.Path),
				ContentSHA256:   r.Header.Get("X-Amz-Content-Sha256"),
				ContentEncoding: r.Header.Get("Content-Encoding"),
				Trailer:         r.Header.Get("X-Amz-Trailer"),
				DecodedLength:   r.Header.Get("X-Amz-Decoded-Content-Length"),
				ContentLength:   r.ContentLength,
				Body:            body,
			})
			mu.Unlock()
		}
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []clientFixture {
		mu.Lock()
		defer mu.Unlock()
		return append([]clientFixture(nil), got...)
	}
}

// fixturePayload is what the capture clients upload: byte i is (i*7) % 251.
func fixturePayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i * 7 % 251)
	}
	return p
}

// checkClientBody decodes a captured body and checks that a one-byte change
// to its data or its trailer fails.
func checkClientBody(t *testing.T, c *clientFixture, payload []byte) {
	t.Helper()
	if c.ContentLength >= 0 && c.ContentLength != int64(len(c.Body)) {
		t.Fatalf("content-length %d, body %d bytes", c.ContentLength, len(c.Body))
	}
	if c.ContentSHA256 != StreamingUnsignedTrailer {
		checkPlainClientBody(t, c, payload)
		return
	}
	cfg := c.config(t)
	got, err := decodeAll(bytes.NewReader(c.Body), cfg)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("decode: %d bytes, %v\nbody tail %q", len(got), err, wireTail(c.Body))
	}
	r := NewChunkedReader(bytes.NewReader(c.Body), cfg)
	io.Copy(io.Discard, r)
	if name, _ := r.Checksum(); cfg.Trailer != nil && !foldEqual(cfg.Trailer, string(name)) {
		t.Fatalf("Checksum name %q, x-amz-trailer %q", name, cfg.Trailer)
	}
	if len(payload) > 0 {
		// The last payload byte sits before "\r\n0\r\n".
		i := bytes.LastIndex(c.Body, []byte("\r\n0\r\n")) - 1
		got, err := decodeAll(bytes.NewReader(flipByte(c.Body, i)), cfg)
		if CodeOf(err) != ErrBadDigest || len(got) >= len(payload) {
			t.Fatalf("last data byte changed: %d bytes, %v", len(got), err)
		}
	}
	if cfg.Trailer != nil {
		i := bytes.LastIndexByte(c.Body, ':') + 1
		got, err := decodeAll(bytes.NewReader(flipByte(c.Body, i)), cfg)
		if CodeOf(err) != ErrBadDigest || len(got) >= len(payload) && len(payload) > 0 {
			t.Fatalf("trailer changed: %d bytes, %v", len(got), err)
		}
	}
}

// checkPlainClientBody checks a body sent whole with its checksum in a header.
func checkPlainClientBody(t *testing.T, c *clientFixture, payload []byte) {
	t.Helper()
	if !bytes.Equal(c.Body, payload) || len(c.Checksums) == 0 {
		t.Fatalf("plain body of %d bytes with checksum headers %v", len(c.Body), c.Checksums)
	}
	for name, value := range c.Checksums {
		a, _ := ParseChecksumAlgorithm([]byte(name))
		got, err := io.ReadAll(NewChecksumReader(bytes.NewReader(c.Body), a, []byte(value)))
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("%s: %d bytes, %v", name, len(got), err)
		}
		got, err = io.ReadAll(NewChecksumReader(bytes.NewReader(flipByte(c.Body, len(c.Body)-1)), a, []byte(value)))
		if CodeOf(err) != ErrBadDigest || len(got) >= len(payload) {
			t.Fatalf("%s, last byte changed: %d bytes, %v", name, len(got), err)
		}
	}
}

// Bodies botocore sent (testdata/chunked/botocore-*.json, captured by
// TestRegenerateBotocoreFixtures from the pinned test venv).
func TestChunkedBotocoreFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/chunked/botocore-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no botocore fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c clientFixture
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			n := 20000
			if strings.Contains(c.Key, "empty") {
				n = 0
			}
			checkClientBody(t, &c, fixturePayload(n))
		})
	}
}

// TestRegenerateBotocoreFixtures rewrites testdata/chunked/botocore-*.json by
// running testdata/chunked/capture_boto3.py against a local TLS capture
// server. Run it with DUCKICELAKE_REGEN_FIXTURES=1 after scripts/venv.sh.
func TestRegenerateBotocoreFixtures(t *testing.T) {
	if os.Getenv("DUCKICELAKE_REGEN_FIXTURES") == "" {
		t.Skip("set DUCKICELAKE_REGEN_FIXTURES=1 to recapture botocore bodies")
	}
	python := testsupport.Python(t)
	srv, captured := captureServer(t, "")
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	version, err := exec.Command(python, "-c", "import botocore; print(botocore.__version__)").Output()
	if err != nil {
		t.Fatalf("pinned venv: %v", err)
	}
	cmd := exec.Command(python, "testdata/chunked/capture_boto3.py", srv.URL, ca)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("capture_boto3.py: %v\n%s", err, out)
	}
	for _, c := range captured() {
		c.Client = "botocore " + strings.TrimSpace(string(version))
		raw, err := json.MarshalIndent(&c, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/chunked/botocore-"+c.Key+".json", append(raw, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote botocore-%s.json (%s, trailer %q)", c.Key, c.ContentSHA256, c.Trailer)
	}
}

// aws-sdk-go-v2's S3 client, with its default checksum behaviour (CRC
// trailers since service/s3 v1.73), sends bodies the reader accepts.
func TestChunkedAWSSDKGoV2Bodies(t *testing.T) {
	srv, captured := captureServer(t, "aws-sdk-go-v2")
	client := s3.NewFromConfig(aws.Config{
		Region:                     "us-east-1",
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		Credentials:                credentials.NewStaticCredentialsProvider("AKIAIOSFODNN7EXAMPLE", vecSecret, ""),
		HTTPClient:                 srv.Client(),
	}, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.UsePathStyle = true
		o.RetryMaxAttempts = 1
	})
	payload := fixturePayload(200000)
	ctx := t.Context()
	puts := []*s3.PutObjectInput{
		{Key: aws.String("default"), Body: bytes.NewReader(payload)},
		{Key: aws.String("crc32c"), Body: bytes.NewReader(payload), ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32c},
		{Key: aws.String("crc64nvme"), Body: bytes.NewReader(payload), ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc64nvme},
		{Key: aws.String("sha1"), Body: bytes.NewReader(payload), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha1},
		{Key: aws.String("sha256"), Body: bytes.NewReader(payload), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256},
		{Key: aws.String("unseekable"), Body: struct{ io.Reader }{bytes.NewReader(payload)}, ContentLength: aws.Int64(int64(len(payload)))},
	}
	for _, in := range puts {
		in.Bucket = aws.String("bucket")
		if _, err := client.PutObject(ctx, in); err != nil {
			t.Fatalf("PutObject %s: %v", *in.Key, err)
		}
	}
	if _, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bucket"), Key: aws.String("part"),
		UploadId: aws.String("u1"), PartNumber: aws.Int32(1), Body: bytes.NewReader(payload),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32}); err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	got := captured()
	if len(got) != len(puts)+1 {
		t.Fatalf("captured %d requests", len(got))
	}
	for i := range got {
		c := &got[i]
		t.Run(c.Key, func(t *testing.T) {
			t.Logf("%s, trailer %q, checksum headers %v", c.ContentSHA256, c.Trailer, c.Checksums)
			checkClientBody(t, c, payload)
		})
	}
}

// A checksum with non-zero base64 padding bits would decode to the same
// digest; only the canonical spelling is accepted, so a value has one form.
func TestChunkedChecksumCanonical(t *testing.T) {
	payload := repeatA(1000)
	b := buildStream(t, chunkStream{payload: payload, trailer: ChecksumCRC32})
	i := b.marks["tvalue"] + 5 // last significant character of "xxxxxx=="
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	c := strings.IndexByte(alphabet, b.wire[i])
	wire := bytes.Clone(b.wire)
	wire[i] = alphabet[c|1]
	if c|1 == c {
		wire[i] = alphabet[c&^1]
	}
	r := NewChunkedReader(bytes.NewReader(wire), b.cfg)
	got, err := io.ReadAll(r)
	if CodeOf(err) != ErrInvalidRequest || len(got) >= len(payload) {
		t.Fatalf("non-canonical checksum: %d of %d bytes, %v; want InvalidRequest before the last byte", len(got), len(payload), err)
	}
	r = NewChunkedReader(bytes.NewReader(b.wire), b.cfg)
	if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("canonical checksum: %d bytes, %v", len(got), err)
	}
	name, value := r.Checksum()
	if want := base64.StdEncoding.EncodeToString(refHash(ChecksumCRC32, payload)); string(name) != "x-amz-checksum-crc32" || string(value) != want {
		t.Fatalf("Checksum = %q %q, want %q", name, value, want)
	}
}
