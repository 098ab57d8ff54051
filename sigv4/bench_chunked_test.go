package sigv4

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"
)

const benchPayloadSize = 8 << 20

func benchPayload() []byte {
	rng := rand.New(rand.NewPCG(7, 8))
	p := make([]byte, benchPayloadSize)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// BenchmarkChunkedDecode decodes an 8 MiB payload held in memory. The plain
// names copy with io.Copy (which uses WriteTo); /Read goes through Read with
// io.Copy's 32 KiB buffer. Compare MB/s with BenchmarkSHA256: decoding cannot
// beat hashing the payload once.
func BenchmarkChunkedDecode(b *testing.B) {
	payload := benchPayload()
	for _, chunk := range []struct {
		name string
		size int
	}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}} {
		for _, mode := range []struct {
			name    string
			signed  bool
			trailer string
		}{
			{"signed", true, ""},
			{"signed+crc32c", true, "x-amz-checksum-crc32c"},
			{"unsigned+crc32c", false, "x-amz-checksum-crc32c"},
		} {
			cfg := &ChunkedConfig{
				Signed:        mode.signed,
				SigningKey:    vecKey(),
				AmzDate:       []byte(vecAmzDate),
				Scope:         []byte(vecScope),
				Trailer:       []byte(mode.trailer),
				DecodedLength: benchPayloadSize,
			}
			wire, err := io.ReadAll(NewChunkedEncoder(bytes.NewReader(payload), cfg, chunk.size))
			if err != nil {
				b.Fatal(err)
			}
			for _, viaRead := range []bool{false, true} {
				name := chunk.name + "/" + mode.name
				if viaRead {
					name += "/Read"
				}
				b.Run(name, func(b *testing.B) {
					src := bytes.NewReader(wire)
					r := NewChunkedReader(src, cfg)
					var rd io.Reader = r
					if viaRead {
						rd = struct{ io.Reader }{r}
					}
					buf := make([]byte, 32<<10)
					b.SetBytes(benchPayloadSize)
					b.ReportAllocs()
					for b.Loop() {
						src.Reset(wire)
						r.Reset(src, cfg)
						n, err := io.CopyBuffer(io.Discard, rd, buf)
						if err != nil || n != benchPayloadSize {
							b.Fatal(n, err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkSHA256 hashes the same 8 MiB with crypto/sha256: the ceiling for
// signed chunk decoding.
func BenchmarkSHA256(b *testing.B) {
	payload := benchPayload()
	h := sha256.New()
	var sum [32]byte
	b.SetBytes(benchPayloadSize)
	b.ReportAllocs()
	for b.Loop() {
		h.Reset()
		h.Write(payload)
		h.Sum(sum[:0])
	}
}

// BenchmarkChunkedEncode encodes 8 MiB as signed aws-chunked with a crc32c
// trailer, as the gateway sends uploads upstream.
func BenchmarkChunkedEncode(b *testing.B) {
	payload := benchPayload()
	cfg := &ChunkedConfig{Signed: true, SigningKey: vecKey(), AmzDate: []byte(vecAmzDate), Scope: []byte(vecScope),
		Trailer: []byte("x-amz-checksum-crc32c"), DecodedLength: benchPayloadSize}
	src := bytes.NewReader(payload)
	enc := new(ChunkedEncoder)
	b.SetBytes(benchPayloadSize)
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(payload)
		enc.Reset(src, cfg, 64<<10)
		if _, err := enc.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
