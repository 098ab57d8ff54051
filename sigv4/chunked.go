package sigv4

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"math"

	"github.com/duckicelake/duckicelake/internal/pct"
)

// DefaultMaxChunkSize is the largest signed aws-chunked chunk a ChunkedReader
// buffers unless ChunkedConfig.MaxChunkSize says otherwise.
const DefaultMaxChunkSize = 16 << 20

const (
	// maxChunkLine bounds a chunk header or trailer line, terminator excluded.
	maxChunkLine = 4096
	// maxTrailerLines bounds the trailer section: one checksum, one signature
	// and some slack for clients that add headers S3 then rejects anyway.
	maxTrailerLines = 8
	// lineFill is how much framing is read at a time, small so that little
	// chunk data lands in the framing buffer and gets copied twice.
	lineFill = 256
	// hashPiece is how much chunk data is read before it is hashed, so the
	// bytes are still in cache when SHA-256 sees them.
	hashPiece = 64 << 10
	// maxEmptyReads is how many (0, nil) reads in a row count as no progress.
	maxEmptyReads = 100

	chunkSignatureExt   = "chunk-signature"
	trailerSignatureKey = "x-amz-trailer-signature"
)

// ChunkedConfig describes one aws-chunked body: how it is signed and what it
// must add up to. The reader copies what it needs; the config and the slices
// it points to may be reused once NewChunkedReader or Reset returns.
type ChunkedConfig struct {
	Signed        bool     // STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER] vs STREAMING-UNSIGNED-PAYLOAD-TRAILER
	SigningKey    [32]byte // DeriveSigningKey for the request's scope
	AmzDate       []byte   // "20130524T000000Z"
	Scope         []byte   // "20130524/us-east-1/s3/aws4_request"
	SeedSignature [32]byte // the request signature, previous signature of the first chunk
	// Trailer is the x-amz-trailer header value (e.g. "x-amz-checksum-crc32c"),
	// empty if none. Leave it empty for STREAMING-AWS4-HMAC-SHA256-PAYLOAD even
	// if the client sent the header: that mode has no trailer section.
	Trailer       []byte
	DecodedLength int64 // x-amz-decoded-content-length; -1 if absent
	MaxChunkSize  int   // largest signed chunk; 0 = DefaultMaxChunkSize
}

type chunkState uint8

const (
	stateHeader chunkState = iota // next: a chunk header
	stateData                     // next: the data of the chunk whose header was read
	stateDone                     // everything verified; out holds the last bytes
)

// ChunkedReader decodes an aws-chunked request body. It yields only verified
// payload bytes and holds back the final bytes until the last chunk
// signature, the trailer signature and the trailing checksum have verified and
// the body has ended, so a caller that forwards what it reads can never
// complete an upload whose end is bad.
//
// Signed chunks are buffered whole (at most MaxChunkSize) and released once
// their signature verified and the next chunk header shows the stream goes
// on. Unsigned chunks carry no signature and may be as large as the whole
// payload (aws-sdk-go-v2 sends a known-length body as one chunk), so they are
// streamed through with their last byte held back the same way; the trailing
// checksum is what verifies them.
//
// Errors are *Error values (a failure of the underlying reader answers as
// IncompleteBody and still matches its cause with errors.Is). Once Read has
// returned an error it returns the same error forever. A ChunkedReader may be
// reused with Reset; it keeps its buffers, so steady use does not allocate.
type ChunkedReader struct {
	wire    io.Reader
	wireEOF bool

	signed     bool
	trailer    ChecksumAlgorithm // 0 if no trailer was declared
	decodedLen int64
	maxChunk   int64

	state chunkState
	err   error
	left  int64 // data bytes of the current chunk not yet read
	total int64 // sum of the chunk sizes seen

	buf  []byte  // signed: the current chunk; unsigned: WriteTo scratch
	pend []byte  // verified bytes held back until the stream is seen to go on
	out  []byte  // released bytes not yet handed to the caller
	hold [1]byte // unsigned: the last byte of the current chunk

	rbuf       []byte // framing bytes read ahead of the parser
	rpos, rend int

	signer   chunkSigner
	wantSig  [32]byte  // signature announced by the current chunk header
	dataHash hash.Hash // SHA-256 of the current chunk's data
	sum      hash.Hash // the trailing checksum, nil if none
	sums     checksumSet
	digest   [32]byte
	ckWant   [maxChecksumSize + 3]byte

	// The trailer as received, kept until it verified.
	tvalue    [64]byte
	tvalueLen int
	tsig      [32]byte
	tline     [80]byte // canonical trailer line, hashed for its signature
	ckDone    bool
	ckName    [32]byte
	ckNameLen int
}

// NewChunkedReader returns a reader of the payload carried by the aws-chunked
// body wire.
func NewChunkedReader(wire io.Reader, cfg *ChunkedConfig) *ChunkedReader {
	r := new(ChunkedReader)
	r.Reset(wire, cfg)
	return r
}

// Reset makes r decode a new body, keeping its buffers.
func (r *ChunkedReader) Reset(wire io.Reader, cfg *ChunkedConfig) {
	r.wire, r.wireEOF = wire, false
	r.signed = cfg.Signed
	r.decodedLen = cfg.DecodedLength
	if r.decodedLen < 0 {
		r.decodedLen = -1
	}
	r.maxChunk = int64(cfg.MaxChunkSize)
	if r.maxChunk <= 0 {
		r.maxChunk = DefaultMaxChunkSize
	}
	r.state, r.err = stateHeader, nil
	r.left, r.total = 0, 0
	r.pend, r.out = nil, nil
	if r.rbuf == nil {
		r.rbuf = make([]byte, maxChunkLine+2+lineFill)
	}
	r.rpos, r.rend = 0, 0
	if r.dataHash == nil {
		r.dataHash = sha256.New()
	}
	r.signer.reset(&cfg.SigningKey, cfg.AmzDate, cfg.Scope, &cfg.SeedSignature)
	r.tvalueLen, r.ckDone, r.ckNameLen = 0, false, 0
	r.trailer, r.sum = 0, nil
	if t := trimOWS(cfg.Trailer); len(t) > 0 {
		a, ok := trailerAlgorithm(t)
		if !ok {
			r.err = newError(ErrInvalidRequest, "The value specified in the x-amz-trailer header is not supported")
			return
		}
		r.trailer, r.sum = a, r.sums.get(a)
	}
}

// trailerAlgorithm maps a trailer name to its algorithm; Content-MD5 cannot be
// sent as a trailer.
func trailerAlgorithm(name []byte) (ChecksumAlgorithm, bool) {
	for a := ChecksumCRC32; a <= ChecksumSHA256; a++ {
		if foldEqual(name, checksumInfo[a].header) {
			return a, true
		}
	}
	return 0, false
}

// Checksum returns the trailing checksum header name (lower case) and its
// base64 value once the body has been read to EOF and the checksum verified;
// nil, nil before that or if the body had no trailer. The slices stay valid
// until Reset.
func (r *ChunkedReader) Checksum() (name, value []byte) {
	if !r.ckDone || r.trailer == 0 {
		return nil, nil
	}
	return r.ckName[:r.ckNameLen], r.tvalue[:r.tvalueLen]
}

// Read reads verified payload bytes.
func (r *ChunkedReader) Read(p []byte) (int, error) {
	for {
		if len(r.out) > 0 {
			n := copy(p, r.out)
			r.out = r.out[n:]
			return n, nil
		}
		if r.err != nil {
			return 0, r.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		switch r.state {
		case stateDone:
			return 0, io.EOF
		case stateHeader:
			r.readHeader()
		case stateData:
			if r.signed {
				r.readSignedChunk()
			} else if n := r.readUnsigned(p); n > 0 {
				return n, nil
			}
		}
	}
}

// WriteTo writes the verified payload to w. It saves io.Copy a copy of every
// signed chunk: chunks are written from the buffer they were verified in.
func (r *ChunkedReader) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for {
		if len(r.out) > 0 {
			n, err := w.Write(r.out)
			written += int64(n)
			r.out = r.out[n:]
			if err != nil {
				return written, err
			}
			if len(r.out) > 0 {
				return written, io.ErrShortWrite
			}
			continue
		}
		if r.err != nil {
			return written, r.err
		}
		switch r.state {
		case stateDone:
			return written, nil
		case stateHeader:
			r.readHeader()
		case stateData:
			if r.signed {
				r.readSignedChunk()
				continue
			}
			if cap(r.buf) < hashPiece {
				r.buf = make([]byte, hashPiece)
			}
			if n := r.readUnsigned(r.buf[:hashPiece]); n > 0 {
				r.out = r.buf[:n]
			}
		}
	}
}

func (r *ChunkedReader) fail(code ErrorCode, msg string) {
	if r.err == nil {
		r.err = newError(code, msg)
	}
}

const incompleteBodyMsg = "You did not provide the number of bytes specified by the Content-Length HTTP header."

// readHeader parses the next chunk header. A data chunk releases the chunk
// before it; the final chunk leads to the trailer and the end checks.
func (r *ChunkedReader) readHeader() {
	line, ok := r.readLine()
	if !ok {
		return
	}
	size, sig, ok := parseChunkHeader(line)
	if !ok {
		r.fail(ErrInvalidChunkSize, "The chunk header is malformed.")
		return
	}
	if r.signed {
		if len(sig) != 2*sha256.Size {
			r.fail(ErrSignatureDoesNotMatch, "The chunk signature is missing or malformed.")
			return
		}
		if _, err := hex.Decode(r.wantSig[:], sig); err != nil {
			r.fail(ErrSignatureDoesNotMatch, "The chunk signature is missing or malformed.")
			return
		}
		if size > r.maxChunk {
			r.fail(ErrInvalidChunkSize, "The chunk is larger than the maximum chunk size.")
			return
		}
	}
	if size > math.MaxInt64-r.total || (r.decodedLen >= 0 && r.total+size > r.decodedLen) {
		r.fail(ErrInvalidChunkSize, "The chunk sizes add up to more than x-amz-decoded-content-length.")
		return
	}
	r.total += size
	r.dataHash.Reset()
	if size == 0 {
		r.finish()
		return
	}
	r.left = size
	r.out, r.pend = r.pend, nil
	r.state = stateData
}

// parseChunkHeader parses `size [ OWS ";" OWS name [ OWS "=" OWS value ] ]...`
// (RFC 9112 chunk extensions with the whitespace some clients put around them)
// and returns the size and the chunk-signature value, if any. Other extensions
// are ignored.
func parseChunkHeader(line []byte) (size int64, sig []byte, ok bool) {
	i := 0
	for ; i < len(line); i++ {
		v, isHex := pct.Unhex(line[i])
		if !isHex {
			break
		}
		if size > math.MaxInt64>>4 {
			return 0, nil, false
		}
		size = size<<4 | int64(v)
	}
	if i == 0 {
		return 0, nil, false
	}
	rest := line[i:]
	for {
		rest = trimLeftOWS(rest)
		if len(rest) == 0 {
			return size, sig, true
		}
		if rest[0] != ';' {
			return 0, nil, false
		}
		rest = trimLeftOWS(rest[1:])
		var name, value []byte
		name, rest = extToken(rest)
		if len(name) == 0 {
			return 0, nil, false
		}
		rest = trimLeftOWS(rest)
		if len(rest) > 0 && rest[0] == '=' {
			value, rest = extToken(trimLeftOWS(rest[1:]))
			if len(value) == 0 {
				return 0, nil, false
			}
		}
		if foldEqual(name, chunkSignatureExt) {
			if sig != nil {
				return 0, nil, false
			}
			sig = value
			if sig == nil {
				sig = line[:0]
			}
		}
	}
}

// extToken splits off an RFC 9110 token.
func extToken(b []byte) (tok, rest []byte) {
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		if c <= ' ' || c >= 0x7f || c == ';' || c == '=' || c == '"' || c == ',' {
			break
		}
	}
	return b[:i], b[i:]
}

func trimLeftOWS(b []byte) []byte {
	for len(b) > 0 && isOWS(b[0]) {
		b = b[1:]
	}
	return b
}

// readSignedChunk reads the current chunk into buf, hashing it piece by piece
// while it is in cache, checks the CRLF after it and verifies its signature.
// The chunk then waits in pend for the next header.
func (r *ChunkedReader) readSignedChunk() {
	size := int(r.left)
	if cap(r.buf) < size {
		// Grow geometrically so a reader that sees growing chunks settles
		// quickly, but never beyond the limit.
		c := max(size, min(2*cap(r.buf), int(r.maxChunk)))
		r.buf = make([]byte, c)
	}
	b := r.buf[:size]
	n := copy(b, r.rbuf[r.rpos:r.rend])
	r.rpos += n
	r.absorb(b[:n])
	for n < size {
		m := r.readWire(b[n:min(size, n+hashPiece)])
		if m == 0 {
			return
		}
		r.absorb(b[n : n+m])
		n += m
	}
	r.left = 0
	if !r.expectCRLF() {
		return
	}
	if !r.verifyChunk() {
		return
	}
	r.pend = b
	r.state = stateHeader
}

func (r *ChunkedReader) absorb(p []byte) {
	if len(p) == 0 {
		return
	}
	r.dataHash.Write(p)
	if r.sum != nil {
		r.sum.Write(p)
	}
}

// verifyChunk checks the announced signature of the chunk whose data is in
// dataHash and makes it the previous signature.
func (r *ChunkedReader) verifyChunk() bool {
	r.dataHash.Sum(r.digest[:0])
	sig := r.signer.chunk(&r.digest)
	if subtle.ConstantTimeCompare(sig[:], r.wantSig[:]) != 1 {
		r.fail(ErrSignatureDoesNotMatch, "The chunk signature does not match the signature calculated from the chunk data.")
		return false
	}
	r.signer.prev = sig
	return true
}

// readUnsigned streams the current unsigned chunk into p, all but its last
// byte, which waits in pend for the next header. It returns the bytes put in
// p; 0 with r.err set on failure, or 0 once the chunk is done.
func (r *ChunkedReader) readUnsigned(p []byte) int {
	if r.left > 1 {
		m := len(p)
		if int64(m) > r.left-1 {
			m = int(r.left - 1)
		}
		var n int
		if r.rpos < r.rend {
			n = copy(p[:m], r.rbuf[r.rpos:r.rend])
			r.rpos += n
		} else {
			n = r.readWire(p[:m])
		}
		if n > 0 && r.sum != nil {
			r.sum.Write(p[:n])
		}
		r.left -= int64(n)
		return n
	}
	if !r.readByte(&r.hold[0]) {
		return 0
	}
	if r.sum != nil {
		r.sum.Write(r.hold[:])
	}
	r.left = 0
	if !r.expectCRLF() {
		return 0
	}
	r.pend = r.hold[:]
	r.state = stateHeader
	return 0
}

// finish handles the final chunk: its signature, the trailer section, the
// checks on the whole payload and the end of the body. Only when all pass is
// the held-back chunk released.
func (r *ChunkedReader) finish() {
	if r.decodedLen >= 0 && r.total != r.decodedLen {
		r.fail(ErrIncompleteBody, incompleteBodyMsg)
		return
	}
	if r.signed && !r.verifyChunk() {
		return
	}
	if !r.readTrailers() {
		return
	}
	if r.trailer != 0 {
		a := r.trailer
		if !decodeChecksum(&r.ckWant, a, r.tvalue[:r.tvalueLen]) {
			r.fail(ErrInvalidRequest, "Value for "+a.HeaderName()+" trailing header is invalid.")
			return
		}
		r.sum.Sum(r.digest[:0])
		if subtle.ConstantTimeCompare(r.digest[:a.Size()], r.ckWant[:a.Size()]) != 1 {
			r.fail(ErrBadDigest, "The "+a.String()+" you specified did not match the calculated checksum.")
			return
		}
	}
	if !r.expectEOF() {
		return
	}
	if r.trailer != 0 {
		// Report the canonical encoding of what verified, fit to forward.
		r.ckNameLen = copy(r.ckName[:], r.trailer.HeaderName())
		r.tvalueLen = len(base64.StdEncoding.AppendEncode(r.tvalue[:0], r.digest[:r.trailer.Size()]))
		r.ckDone = true
	}
	r.out, r.pend = r.pend, nil
	r.state = stateDone
}

const malformedTrailerMsg = "The request contained trailing data that was not well-formed or did not conform to our published schema."

// readTrailers reads the trailer section up to its terminating empty line and
// verifies the trailer signature. Lines end in CRLF; trailing whitespace and
// a stray LF before the CRLF (minio-go writes "name:value\n\r\n") are
// ignored, and so are the case of names and whitespace around the colon.
func (r *ChunkedReader) readTrailers() bool {
	haveValue, haveSig := false, false
	for i := 0; ; i++ {
		line, ok := r.readLine()
		if !ok {
			return false
		}
		for len(line) > 0 && (isOWS(line[len(line)-1]) || line[len(line)-1] == '\n') {
			line = line[:len(line)-1]
		}
		line = trimLeftOWS(line)
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if i >= maxTrailerLines || colon <= 0 || bytes.ContainsAny(line, "\r\n") {
			r.fail(ErrMalformedTrailer, malformedTrailerMsg)
			return false
		}
		name, value := trimOWS(line[:colon]), trimOWS(line[colon+1:])
		switch {
		case haveSig:
			// Nothing may follow the trailer signature.
			r.fail(ErrMalformedTrailer, malformedTrailerMsg)
			return false
		case r.signed && foldEqual(name, trailerSignatureKey):
			if len(value) != 2*sha256.Size {
				r.fail(ErrSignatureDoesNotMatch, "The trailer signature is malformed.")
				return false
			}
			if _, err := hex.Decode(r.tsig[:], value); err != nil {
				r.fail(ErrSignatureDoesNotMatch, "The trailer signature is malformed.")
				return false
			}
			haveSig = true
		case r.trailer != 0 && !haveValue && foldEqual(name, r.trailer.HeaderName()):
			if len(value) > len(r.tvalue) {
				r.fail(ErrInvalidRequest, "Value for "+r.trailer.HeaderName()+" trailing header is invalid.")
				return false
			}
			r.tvalueLen = copy(r.tvalue[:], value)
			haveValue = true
		default:
			// Undeclared, repeated, or a different algorithm than x-amz-trailer named.
			r.fail(ErrMalformedTrailer, malformedTrailerMsg)
			return false
		}
	}
	if r.trailer != 0 && (!haveValue || (r.signed && !haveSig)) {
		r.fail(ErrMalformedTrailer, malformedTrailerMsg)
		return false
	}
	if haveSig {
		// The signed form is the canonical one: lower-case name, trimmed
		// value, each line ending in "\n".
		h := r.dataHash
		h.Reset()
		if r.trailer != 0 {
			l := append(r.tline[:0], r.trailer.HeaderName()...)
			l = append(l, ':')
			l = append(l, r.tvalue[:r.tvalueLen]...)
			l = append(l, '\n')
			h.Write(l)
		}
		h.Sum(r.digest[:0])
		sig := r.signer.trailer(&r.digest)
		if subtle.ConstantTimeCompare(sig[:], r.tsig[:]) != 1 {
			r.fail(ErrSignatureDoesNotMatch, "The trailer signature does not match the signature calculated from the trailer.")
			return false
		}
	}
	return true
}

// readLine returns the next line without its CRLF. The slice aliases the
// framing buffer until the next read.
func (r *ChunkedReader) readLine() ([]byte, bool) {
	for {
		buffered := r.rbuf[r.rpos:r.rend]
		if i := indexCRLF(buffered); i >= 0 {
			if i > maxChunkLine {
				break
			}
			r.rpos += i + 2
			return buffered[:i], true
		}
		if len(buffered) > maxChunkLine+1 {
			break
		}
		if !r.fill() {
			return nil, false
		}
	}
	r.fail(ErrInvalidChunkSize, "A chunk header or trailer line is too long.")
	return nil, false
}

// indexCRLF returns the index of the first "\r\n" in b, or -1.
func indexCRLF(b []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return -1
		}
		if i += off; i > 0 && b[i-1] == '\r' {
			return i - 1
		}
		off = i + 1
	}
}

// expectCRLF consumes the CRLF that ends chunk data.
func (r *ChunkedReader) expectCRLF() bool {
	for r.rend-r.rpos < 2 {
		if !r.fill() {
			return false
		}
	}
	if r.rbuf[r.rpos] != '\r' || r.rbuf[r.rpos+1] != '\n' {
		r.fail(ErrInvalidChunkSize, "The chunk data is not followed by CRLF: the chunk size does not match its data.")
		return false
	}
	r.rpos += 2
	return true
}

func (r *ChunkedReader) readByte(b *byte) bool {
	for r.rpos == r.rend {
		if !r.fill() {
			return false
		}
	}
	*b = r.rbuf[r.rpos]
	r.rpos++
	return true
}

// fill reads more framing into rbuf.
func (r *ChunkedReader) fill() bool {
	if r.rpos == r.rend {
		r.rpos, r.rend = 0, 0
	} else if r.rend+lineFill > len(r.rbuf) {
		r.rend = copy(r.rbuf, r.rbuf[r.rpos:r.rend])
		r.rpos = 0
	}
	n := r.readWire(r.rbuf[r.rend:min(len(r.rbuf), r.rend+lineFill)])
	r.rend += n
	return n > 0
}

// readWire reads from the body into p. It returns 0 only with r.err set.
func (r *ChunkedReader) readWire(p []byte) int {
	if r.wireEOF {
		r.fail(ErrIncompleteBody, incompleteBodyMsg)
		return 0
	}
	for range maxEmptyReads {
		n, err := r.wire.Read(p)
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				r.wireEOF = true
				if n == 0 {
					r.fail(ErrIncompleteBody, incompleteBodyMsg)
				}
			} else if r.err == nil {
				r.err = &bodyReadError{code: newError(ErrIncompleteBody, "The request body could not be read."), cause: err}
			}
			return n
		}
		if n > 0 {
			return n
		}
	}
	r.err = &bodyReadError{code: newError(ErrIncompleteBody, "The request body could not be read."), cause: io.ErrNoProgress}
	return 0
}

// expectEOF checks that nothing follows the final CRLF.
func (r *ChunkedReader) expectEOF() bool {
	if r.rpos < r.rend {
		r.fail(ErrMalformedTrailer, malformedTrailerMsg)
		return false
	}
	for range maxEmptyReads {
		if r.wireEOF {
			return true
		}
		n, err := r.wire.Read(r.rbuf[:1])
		if n > 0 {
			r.fail(ErrMalformedTrailer, malformedTrailerMsg)
			return false
		}
		if err == io.EOF {
			r.wireEOF = true
		} else if err != nil {
			r.err = &bodyReadError{code: newError(ErrIncompleteBody, "The request body could not be read."), cause: err}
			return false
		}
	}
	if r.wireEOF {
		return true
	}
	r.err = &bodyReadError{code: newError(ErrIncompleteBody, "The request body could not be read."), cause: io.ErrNoProgress}
	return false
}

// bodyReadError is a failure of the underlying body reader. It answers as
// its *Error (CodeOf, errors.As) and still matches its cause with errors.Is,
// so a caller can tell a client timeout from a bad body.
type bodyReadError struct {
	code  *Error
	cause error
}

func (e *bodyReadError) Error() string        { return e.code.Error() + ": " + e.cause.Error() }
func (e *bodyReadError) Unwrap() error        { return e.code }
func (e *bodyReadError) Is(target error) bool { return errors.Is(e.cause, target) }

// chunkSigner computes the rolling chunk and trailer signatures of one
// aws-chunked stream. buf holds the inner HMAC input: the key's ipad block and
// the string to sign, whose first lines are fixed for the stream.
type chunkSigner struct {
	key   [32]byte
	prev  [32]byte
	buf   []byte
	fixed int
}

func (s *chunkSigner) reset(key *[32]byte, amzDate, scope []byte, seed *[32]byte) {
	s.key, s.prev = *key, *seed
	b := s.buf[:0]
	for _, k := range key {
		b = append(b, k^0x36)
	}
	for range 32 {
		b = append(b, 0x36)
	}
	b = append(b, chunkStringToSignPrefix+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	b = append(b, scope...)
	b = append(b, '\n')
	s.buf, s.fixed = b, len(b)
}

// chunk returns the signature of a chunk whose data hashes to sum, chained to
// s.prev. The caller advances s.prev once it trusts the result.
func (s *chunkSigner) chunk(sum *[32]byte) [32]byte {
	b := s.buf[:s.fixed]
	copy(b[64:], chunkStringToSignPrefix)
	b = hex.AppendEncode(b, s.prev[:])
	b = append(b, '\n')
	b = append(b, emptySHA256Hex+"\n"...)
	b = hex.AppendEncode(b, sum[:])
	s.buf = b
	return s.mac(b)
}

// trailer returns the signature of a trailer section whose canonical form
// hashes to sum.
func (s *chunkSigner) trailer(sum *[32]byte) [32]byte {
	b := s.buf[:s.fixed]
	copy(b[64:], trailerStringToSignPrefix)
	b = hex.AppendEncode(b, s.prev[:])
	b = append(b, '\n')
	b = hex.AppendEncode(b, sum[:])
	s.buf = b
	return s.mac(b)
}

// mac finishes HMAC-SHA256: inner is ipad || message.
func (s *chunkSigner) mac(inner []byte) [32]byte {
	ih := sha256.Sum256(inner)
	var b [96]byte
	for i, k := range s.key {
		b[i] = k ^ 0x5c
	}
	for i := 32; i < 64; i++ {
		b[i] = 0x5c
	}
	copy(b[64:], ih[:])
	return sha256.Sum256(b[:])
}
