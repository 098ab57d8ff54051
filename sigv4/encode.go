package sigv4

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
)

// DefaultEncodeChunkSize is the chunk size NewChunkedEncoder uses when given 0.
const DefaultEncodeChunkSize = 64 << 10

// encHeadroom is room before the chunk data for the longest chunk header:
// 16 hex digits, ";chunk-signature=", 64 hex digits and CRLF.
const encHeadroom = 16 + 1 + len(chunkSignatureExt) + 1 + 64 + 2

// NewChunkedEncoder returns a reader of the aws-chunked encoding of src, for
// a request signed with x-amz-content-sha256 STREAMING-AWS4-HMAC-SHA256-PAYLOAD
// (cfg.Signed, no cfg.Trailer), STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
// (cfg.Signed with cfg.Trailer) or STREAMING-UNSIGNED-PAYLOAD-TRAILER.
// cfg.SeedSignature is the request's signature; with cfg.Trailer naming an
// x-amz-checksum-* header, the checksum of src follows the final chunk (signed
// in the signed modes).
//
// Every chunk but the last holds chunkSize bytes (0 means
// DefaultEncodeChunkSize), which makes the length EncodedLength says. The
// final chunk is written only once src has returned io.EOF, and, when
// cfg.DecodedLength >= 0, only if src produced exactly that many bytes, so a
// backend receiving the encoding cannot complete an upload whose source
// failed: an error from src is returned as is and ends the encoding.
func NewChunkedEncoder(src io.Reader, cfg *ChunkedConfig, chunkSize int) io.Reader {
	if chunkSize <= 0 {
		chunkSize = DefaultEncodeChunkSize
	}
	e := &chunkedEncoder{
		src:        src,
		signed:     cfg.Signed,
		decodedLen: cfg.DecodedLength,
		chunkSize:  chunkSize,
		buf:        make([]byte, encHeadroom+chunkSize+2),
	}
	if e.decodedLen < 0 {
		e.decodedLen = -1
	}
	if e.signed {
		e.dataHash = sha256.New()
		e.signer.reset(&cfg.SigningKey, cfg.AmzDate, cfg.Scope, &cfg.SeedSignature)
	}
	if t := trimOWS(cfg.Trailer); len(t) > 0 {
		a, ok := trailerAlgorithm(t)
		if !ok {
			e.err = newError(ErrInvalidRequest, "The value specified in the x-amz-trailer header is not supported")
		} else {
			e.trailer, e.sum = a, a.New()
		}
	}
	return e
}

// EncodedLength returns the Content-Length of the encoding NewChunkedEncoder
// produces for decodedLength payload bytes, or -1 if decodedLength is
// negative or cfg.Trailer is not a supported checksum.
func EncodedLength(decodedLength int64, chunkSize int, cfg *ChunkedConfig) int64 {
	if decodedLength < 0 {
		return -1
	}
	if chunkSize <= 0 {
		chunkSize = DefaultEncodeChunkSize
	}
	var ext int64
	if cfg.Signed {
		ext = int64(1 + len(chunkSignatureExt) + 1 + 64)
	}
	chunk := func(size int64) int64 {
		return int64(len(strconv.FormatInt(size, 16))) + ext + 2 + size + 2
	}
	cs := int64(chunkSize)
	n := decodedLength / cs * chunk(cs)
	if rem := decodedLength % cs; rem > 0 {
		n += chunk(rem)
	}
	n += 1 + ext + 2 // final chunk
	if t := trimOWS(cfg.Trailer); len(t) > 0 {
		a, ok := trailerAlgorithm(t)
		if !ok {
			return -1
		}
		n += int64(len(a.HeaderName()) + 1 + a.encodedSize() + 2)
		if cfg.Signed {
			n += int64(len(trailerSignatureKey) + 1 + 64 + 2)
		}
	}
	return n + 2
}

type chunkedEncoder struct {
	src        io.Reader
	srcEOF     bool
	signed     bool
	signer     chunkSigner
	dataHash   hash.Hash
	trailer    ChecksumAlgorithm
	sum        hash.Hash
	decodedLen int64
	total      int64
	chunkSize  int
	buf        []byte // headroom, chunk data, CRLF
	out        []byte // encoded bytes not yet read
	digest     [32]byte
	done       bool
	err        error
}

func (e *chunkedEncoder) Read(p []byte) (int, error) {
	for {
		if len(e.out) > 0 {
			n := copy(p, e.out)
			e.out = e.out[n:]
			return n, nil
		}
		if e.err != nil {
			return 0, e.err
		}
		if e.done {
			return 0, io.EOF
		}
		if len(p) == 0 {
			return 0, nil
		}
		if e.srcEOF {
			e.final()
		} else {
			e.next()
		}
	}
}

// next reads up to a chunk from src and encodes it in place.
func (e *chunkedEncoder) next() {
	data := e.buf[encHeadroom : encHeadroom+e.chunkSize]
	if e.dataHash != nil {
		e.dataHash.Reset()
	}
	n, empty := 0, 0
	for n < len(data) && !e.srcEOF {
		m, err := e.src.Read(data[n:])
		if m > 0 {
			if e.dataHash != nil {
				e.dataHash.Write(data[n : n+m])
			}
			if e.sum != nil {
				e.sum.Write(data[n : n+m])
			}
			n += m
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			err = io.ErrNoProgress
		}
		if err == io.EOF {
			e.srcEOF = true
		} else if err != nil {
			e.err = err
			return
		}
	}
	e.total += int64(n)
	if e.decodedLen >= 0 && e.total > e.decodedLen {
		e.err = newError(ErrIncompleteBody, "The payload is longer than its declared length.")
		return
	}
	if n == 0 {
		return
	}
	var hdr [encHeadroom]byte
	h := strconv.AppendInt(hdr[:0], int64(n), 16)
	if e.signed {
		e.dataHash.Sum(e.digest[:0])
		sig := e.signer.chunk(&e.digest)
		e.signer.prev = sig
		h = append(h, ';')
		h = append(h, chunkSignatureExt+"="...)
		h = hex.AppendEncode(h, sig[:])
	}
	h = append(h, '\r', '\n')
	start := encHeadroom - len(h)
	copy(e.buf[start:], h)
	end := encHeadroom + n
	e.buf[end], e.buf[end+1] = '\r', '\n'
	e.out = e.buf[start : end+2]
}

// final encodes the final chunk and the trailer section.
func (e *chunkedEncoder) final() {
	if e.decodedLen >= 0 && e.total != e.decodedLen {
		e.err = newError(ErrIncompleteBody, incompleteBodyMsg)
		return
	}
	b := append(e.buf[:0], '0')
	if e.signed {
		e.dataHash.Reset()
		e.dataHash.Sum(e.digest[:0])
		sig := e.signer.chunk(&e.digest)
		e.signer.prev = sig
		b = append(b, ';')
		b = append(b, chunkSignatureExt+"="...)
		b = hex.AppendEncode(b, sig[:])
	}
	b = append(b, '\r', '\n')
	if e.trailer != 0 {
		lineStart := len(b)
		b = append(b, e.trailer.HeaderName()...)
		b = append(b, ':')
		var d [maxChecksumSize]byte
		b = base64.StdEncoding.AppendEncode(b, e.sum.Sum(d[:0]))
		b = append(b, '\n')
		if e.signed {
			e.digest = sha256.Sum256(b[lineStart:])
			sig := e.signer.trailer(&e.digest)
			e.signer.prev = sig
			b[len(b)-1] = '\r'
			b = append(b, '\n')
			b = append(b, trailerSignatureKey+":"...)
			b = hex.AppendEncode(b, sig[:])
			b = append(b, '\r', '\n')
		} else {
			b[len(b)-1] = '\r'
			b = append(b, '\n')
		}
	}
	b = append(b, '\r', '\n')
	e.out = b
	e.done = true
}
