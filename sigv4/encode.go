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
func NewChunkedEncoder(src io.Reader, cfg *ChunkedConfig, chunkSize int) *ChunkedEncoder {
	e := new(ChunkedEncoder)
	e.Reset(src, cfg, chunkSize)
	return e
}

// ChunkedEncoder is the reader NewChunkedEncoder returns. Reset reuses one
// for another body, keeping its chunk buffer and hash states.
type ChunkedEncoder struct {
	src        io.Reader
	srcEOF     bool
	signed     bool
	signer     chunkSigner
	dataHash   hash.Hash // the chunk hash in the signed modes, else nil
	sha        hash.Hash // dataHash's state, kept across Reset
	trailer    ChecksumAlgorithm
	sum        hash.Hash
	sums       [ChecksumSHA256 + 1]hash.Hash // checksum states by algorithm, kept across Reset
	decodedLen int64
	total      int64
	chunkSize  int
	buf        []byte // headroom, chunk data, CRLF
	out        []byte // encoded bytes not yet read
	digest     [32]byte
	ck         [maxChecksumSize]byte
	done       bool
	err        error
}

// Reset makes e the encoder NewChunkedEncoder(src, cfg, chunkSize) would
// return. The chunk buffer is kept when it is large enough.
func (e *ChunkedEncoder) Reset(src io.Reader, cfg *ChunkedConfig, chunkSize int) {
	if chunkSize <= 0 {
		chunkSize = DefaultEncodeChunkSize
	}
	buf, sha, sums, sigBuf := e.buf, e.sha, e.sums, e.signer.buf[:0]
	if need := encHeadroom + chunkSize + 2; cap(buf) < need {
		buf = make([]byte, need)
	}
	*e = ChunkedEncoder{
		src:        src,
		signed:     cfg.Signed,
		decodedLen: cfg.DecodedLength,
		chunkSize:  chunkSize,
		buf:        buf[:encHeadroom+chunkSize+2],
		sha:        sha,
		sums:       sums,
	}
	e.signer.buf = sigBuf
	if e.decodedLen < 0 {
		e.decodedLen = -1
	}
	if e.signed {
		if e.sha == nil {
			e.sha = sha256.New()
		}
		e.dataHash = e.sha
		e.signer.reset(&cfg.SigningKey, cfg.AmzDate, cfg.Scope, &cfg.SeedSignature)
	}
	if t := trimOWS(cfg.Trailer); len(t) > 0 {
		a, ok := trailerAlgorithm(t)
		if !ok {
			e.err = newError(ErrInvalidRequest, "The value specified in the x-amz-trailer header is not supported")
		} else {
			if e.sums[a] == nil {
				e.sums[a] = a.New()
			} else {
				e.sums[a].Reset()
			}
			e.trailer, e.sum = a, e.sums[a]
		}
	}
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

// Read implements io.Reader.
func (e *ChunkedEncoder) Read(p []byte) (int, error) {
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

// WriteTo implements io.WriterTo: each encoded chunk goes to w straight from
// the encoder's buffer, in one Write, instead of being copied into a
// caller's buffer. It stops with the same errors Read would return.
func (e *ChunkedEncoder) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for {
		if len(e.out) > 0 {
			n, err := w.Write(e.out)
			written += int64(n)
			e.out = e.out[n:]
			if err == nil && len(e.out) > 0 {
				err = io.ErrShortWrite
			}
			if err != nil {
				return written, err
			}
		}
		switch {
		case e.err != nil:
			return written, e.err
		case e.done:
			return written, nil
		case e.srcEOF:
			e.final()
		default:
			e.next()
		}
	}
}

// next reads up to a chunk from src and encodes it in place.
func (e *ChunkedEncoder) next() {
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
	h = e.appendChunkExt(h)
	start := encHeadroom - len(h)
	copy(e.buf[start:], h)
	end := encHeadroom + n
	e.buf[end], e.buf[end+1] = '\r', '\n'
	e.out = e.buf[start : end+2]
}

// appendChunkExt ends a chunk header after its size: when signed, the
// chunk-signature extension over the data hashed so far (which it chains
// as the previous signature), then CRLF.
func (e *ChunkedEncoder) appendChunkExt(h []byte) []byte {
	if e.signed {
		e.dataHash.Sum(e.digest[:0])
		sig := e.signer.chunk(&e.digest)
		e.signer.prev = sig
		h = append(h, ';')
		h = append(h, chunkSignatureExt+"="...)
		h = hex.AppendEncode(h, sig[:])
	}
	return append(h, '\r', '\n')
}

// final encodes the final chunk and the trailer section.
func (e *ChunkedEncoder) final() {
	if e.decodedLen >= 0 && e.total != e.decodedLen {
		e.err = newError(ErrIncompleteBody, incompleteBodyMsg)
		return
	}
	b := append(e.buf[:0], '0')
	if e.signed {
		e.dataHash.Reset()
	}
	b = e.appendChunkExt(b)
	if e.trailer != 0 {
		lineStart := len(b)
		b = append(b, e.trailer.HeaderName()...)
		b = append(b, ':')
		b = base64.StdEncoding.AppendEncode(b, e.sum.Sum(e.ck[:0]))
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
