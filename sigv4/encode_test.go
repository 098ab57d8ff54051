package sigv4

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func encodeAll(t testing.TB, src io.Reader, cfg *ChunkedConfig, chunkSize int) ([]byte, error) {
	t.Helper()
	return io.ReadAll(NewChunkedEncoder(src, cfg, chunkSize))
}

// Encoding the AWS examples reproduces them byte for byte, signatures included.
func TestChunkedEncoderAWSVectors(t *testing.T) {
	payload := repeatA(66560)
	tests := []struct {
		name    string
		s       chunkStream
		trailer bool
		length  int64 // documented content-length, 0 if none
	}{
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", chunkStream{signed: true, seed: "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"}, false, 66824},
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", chunkStream{signed: true, seed: "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e"}, true, 0},
		{"STREAMING-UNSIGNED-PAYLOAD-TRAILER", chunkStream{}, true, 0},
	}
	docSigs := []string{
		// chunk signatures of the two signed examples, in order
		"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
		"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
		"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
		"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
		"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
		"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
		"d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435", // trailer
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s
			s.payload, s.sizes = payload, []int{65536}
			if tt.trailer {
				s.trailer = ChecksumCRC32C
			}
			want := buildStream(t, s)
			got, err := encodeAll(t, bytes.NewReader(payload), want.cfg, 65536)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.wire) {
				t.Fatalf("encoding differs from the reference:\n got %q\nwant %q", wireTail(got), wireTail(want.wire))
			}
			if n := EncodedLength(int64(len(payload)), 65536, want.cfg); n != int64(len(got)) {
				t.Fatalf("EncodedLength = %d, encoding has %d bytes", n, len(got))
			}
			if tt.length != 0 && int64(len(got)) != tt.length {
				t.Fatalf("%d bytes, documented content-length %d", len(got), tt.length)
			}
			if s.signed {
				n := 0
				for _, sig := range docSigs {
					n += bytes.Count(got, []byte(sig))
				}
				if want := 3 + map[bool]int{true: 1}[tt.trailer]; n != want {
					t.Fatalf("encoding holds %d documented signatures, want %d", n, want)
				}
			}
			if tt.trailer && !bytes.Contains(got, []byte("\r\nx-amz-checksum-crc32c:sOO8/Q==\r\n")) {
				t.Fatalf("no documented trailer in %q", wireTail(got))
			}
		})
	}
}

func wireTail(b []byte) []byte { return b[max(0, len(b)-300):] }

// decode(encode(x)) == x across sizes, chunk sizes and trailers, and the
// encoding is exactly EncodedLength long.
func TestChunkedEncoderRoundTrip(t *testing.T) {
	type mode struct {
		signed  bool
		trailer ChecksumAlgorithm
	}
	modes := []mode{{signed: true}}
	for _, a := range allTrailerAlgorithms {
		modes = append(modes, mode{true, a}, mode{false, a})
	}
	data := make([]byte, 200003)
	for i := range data {
		data[i] = byte(i*131 + i>>8)
	}
	for _, size := range []int{0, 1, 2, 100, 8191, 8192, 8193, 65536, 200003} {
		for _, chunkSize := range []int{0, 1, 7, 8192, 65536} {
			if chunkSize > 0 && size/chunkSize > 2000 {
				continue
			}
			for _, m := range modes {
				cfg := &ChunkedConfig{
					Signed:        m.signed,
					SigningKey:    vecKey(),
					AmzDate:       []byte(vecAmzDate),
					Scope:         []byte(vecScope),
					DecodedLength: int64(size),
				}
				cfg.SeedSignature[0] = byte(size)
				if m.trailer != 0 {
					cfg.Trailer = []byte(m.trailer.HeaderName())
				}
				payload := data[:size]
				wire, err := encodeAll(t, iotest.HalfReader(bytes.NewReader(payload)), cfg, chunkSize)
				if err != nil {
					t.Fatalf("size %d chunk %d %+v: encode: %v", size, chunkSize, m, err)
				}
				if n := EncodedLength(int64(size), chunkSize, cfg); n != int64(len(wire)) {
					t.Fatalf("size %d chunk %d %+v: EncodedLength %d, encoding %d bytes", size, chunkSize, m, n, len(wire))
				}
				got, err := decodeAll(bytes.NewReader(wire), cfg)
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("size %d chunk %d %+v: decode: %d bytes, %v", size, chunkSize, m, len(got), err)
				}
				// Unknown length encodes the same bytes.
				cfg.DecodedLength = -1
				wire2, err := encodeAll(t, iotest.OneByteReader(bytes.NewReader(payload)), cfg, chunkSize)
				if err != nil || !bytes.Equal(wire2, wire) {
					t.Fatalf("size %d chunk %d %+v: unknown length encodes differently (%v)", size, chunkSize, m, err)
				}
			}
		}
	}
}

// The encoder never writes the final chunk when its source fails or ends at
// the wrong length, so the backend cannot complete the upload.
func TestChunkedEncoderIncompleteSource(t *testing.T) {
	payload := repeatA(100000)
	cause := newError(ErrSignatureDoesNotMatch, "bad chunk")
	tests := []struct {
		name    string
		src     io.Reader
		decoded int64
		want    error
	}{
		{"source error", &failAfter{bytes.NewReader(payload[:70000]), cause}, 100000, cause},
		{"source error, length unknown", &failAfter{bytes.NewReader(payload[:70000]), cause}, -1, cause},
		{"source error at a chunk boundary", &failAfter{bytes.NewReader(payload[:65536]), cause}, -1, cause},
		{"source short", bytes.NewReader(payload[:99999]), 100000, &Error{Code: ErrIncompleteBody}},
		{"source long", bytes.NewReader(payload), 99999, &Error{Code: ErrIncompleteBody}},
		{"source stalls", neverReader{}, -1, io.ErrNoProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &ChunkedConfig{Signed: true, SigningKey: vecKey(), AmzDate: []byte(vecAmzDate), Scope: []byte(vecScope),
				Trailer: []byte("x-amz-checksum-crc32c"), DecodedLength: tt.decoded}
			wire, err := encodeAll(t, tt.src, cfg, 65536)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if bytes.Contains(wire, []byte("\r\n0;chunk-signature=")) || bytes.HasPrefix(wire, []byte("0;")) {
				t.Fatal("final chunk written")
			}
			got, err := decodeAll(bytes.NewReader(wire), cfg)
			if err == nil || len(got) >= len(payload) {
				t.Fatalf("partial encoding decoded: %d bytes, %v", len(got), err)
			}
		})
	}
}

// A reused encoder (Reset) produces what a new one does, read with Read or
// written with WriteTo, across modes, sizes and chunk sizes in any order.
func TestChunkedEncoderResetAndWriteTo(t *testing.T) {
	data := make([]byte, 150001)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	type tc struct {
		size, chunk int
		signed      bool
		trailer     ChecksumAlgorithm
	}
	var cases []tc
	for _, size := range []int{0, 1, 8192, 65537, 150001} {
		for _, chunk := range []int{8192, 65536, 0} {
			cases = append(cases, tc{size, chunk, true, 0}, tc{size, chunk, true, ChecksumCRC32C},
				tc{size, chunk, false, ChecksumCRC32C}, tc{size, chunk, false, ChecksumSHA256})
		}
	}
	reused := new(ChunkedEncoder)
	for i, c := range cases {
		cfg := &ChunkedConfig{Signed: c.signed, SigningKey: vecKey(), AmzDate: []byte(vecAmzDate), Scope: []byte(vecScope),
			DecodedLength: int64(c.size)}
		cfg.SeedSignature[1] = byte(i)
		if c.trailer != 0 {
			cfg.Trailer = []byte(c.trailer.HeaderName())
		}
		want, err := encodeAll(t, bytes.NewReader(data[:c.size]), cfg, c.chunk)
		if err != nil {
			t.Fatal(err)
		}
		reused.Reset(iotest.HalfReader(bytes.NewReader(data[:c.size])), cfg, c.chunk)
		got, err := io.ReadAll(reused)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v: reused encoder, Read: %d bytes (%v), want %d", c, len(got), err, len(want))
		}
		var buf bytes.Buffer
		reused.Reset(bytes.NewReader(data[:c.size]), cfg, c.chunk)
		n, err := reused.WriteTo(&buf)
		if err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("%+v: WriteTo: %d bytes (%v), want %d", c, n, err, len(want))
		}
	}
}

// WriteTo stops with the source's error and never writes the final chunk.
func TestChunkedEncoderWriteToIncompleteSource(t *testing.T) {
	payload := repeatA(100000)
	cause := newError(ErrSignatureDoesNotMatch, "bad chunk")
	for _, src := range []io.Reader{&failAfter{bytes.NewReader(payload[:70000]), cause}, bytes.NewReader(payload[:99999])} {
		cfg := &ChunkedConfig{Signed: true, SigningKey: vecKey(), AmzDate: []byte(vecAmzDate), Scope: []byte(vecScope),
			DecodedLength: 100000}
		var buf bytes.Buffer
		_, err := NewChunkedEncoder(src, cfg, 65536).WriteTo(&buf)
		if err == nil || bytes.Contains(buf.Bytes(), []byte("\r\n0;chunk-signature=")) {
			t.Fatalf("WriteTo: %v, final chunk written: %v", err, bytes.Contains(buf.Bytes(), []byte("\r\n0;")))
		}
	}
}

func TestChunkedEncoderBadTrailer(t *testing.T) {
	cfg := &ChunkedConfig{Trailer: []byte("x-amz-checksum-md5"), DecodedLength: 3}
	if n := EncodedLength(3, 0, cfg); n != -1 {
		t.Fatalf("EncodedLength = %d", n)
	}
	if n := EncodedLength(-1, 0, &ChunkedConfig{}); n != -1 {
		t.Fatalf("EncodedLength(-1) = %d", n)
	}
	_, err := encodeAll(t, strings.NewReader("abc"), cfg, 0)
	if CodeOf(err) != ErrInvalidRequest {
		t.Fatalf("error %v", err)
	}
}

// Our signed encoding of a payload equals minio-go's, given its seed.
func TestChunkedEncoderMatchesMinioGo(t *testing.T) {
	for _, size := range []int{1, 65536, 150000} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = byte(i % 251)
		}
		wire, cfg := minioGoBody(t, "signed", payload)
		got, err := encodeAll(t, bytes.NewReader(payload), cfg, 64<<10)
		if err != nil || !bytes.Equal(got, wire) {
			t.Fatalf("size %d: encoding differs from minio-go's (%v)\n got %q\nwant %q", size, err, wireTail(got), wireTail(wire))
		}
	}
}

func TestEncodedLength(t *testing.T) {
	signed := &ChunkedConfig{Signed: true}
	tests := []struct {
		decoded   int64
		chunkSize int
		cfg       *ChunkedConfig
		want      int64
	}{
		// The AWS example: 65536 + 1024 bytes, 64 KiB chunks.
		{66560, 65536, signed, 66824},
		{0, 65536, signed, 86},
		{0, 0, &ChunkedConfig{}, 5},
		{1, 0, &ChunkedConfig{Trailer: []byte("x-amz-checksum-crc32")}, int64(len("1\r\nx\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"))},
	}
	for _, tt := range tests {
		if got := EncodedLength(tt.decoded, tt.chunkSize, tt.cfg); got != tt.want {
			t.Errorf("EncodedLength(%d, %d, %+v) = %d, want %d", tt.decoded, tt.chunkSize, tt.cfg, got, tt.want)
		}
	}
	// Large lengths do not overflow.
	if got := EncodedLength(5<<40, 16<<20, signed); got <= 5<<40 {
		t.Errorf("EncodedLength(5 TiB) = %d", got)
	}
}
