package sigv4

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"hash"
	"io"
)

// NewSHA256Reader returns a reader of a body whose x-amz-content-sha256 is the
// hex SHA-256 want. It streams the body while hashing it and holds back the
// final byte until the body has ended with the expected hash, so a caller that
// forwards what it reads cannot complete an upload of the wrong bytes. A hash
// mismatch answers XAmzContentSHA256Mismatch, a body shorter than length
// IncompleteBody. length is the expected body length, -1 if unknown.
func NewSHA256Reader(wire io.Reader, want [32]byte, length int64) io.Reader {
	r := &holdBackReader{wire: wire, h: sha256.New(), size: sha256.Size, length: length, alg: 0}
	copy(r.want[:], want[:])
	if r.length < 0 {
		r.length = -1
	}
	return r
}

// NewChecksumReader returns a reader of a body that came with a checksum
// header: x-amz-checksum-crc32|crc32c|crc64nvme|sha1|sha256 or Content-MD5,
// want being the header's base64 value. Like NewSHA256Reader it holds back the
// final byte until the checksum matched (BadDigest otherwise). A malformed
// header value answers InvalidRequest (InvalidDigest for Content-MD5) on the
// first Read. want is decoded before NewChecksumReader returns.
func NewChecksumReader(wire io.Reader, algorithm ChecksumAlgorithm, want []byte) io.Reader {
	r := &holdBackReader{wire: wire, length: -1, alg: algorithm}
	var buf [maxChecksumSize + 3]byte
	switch {
	case !algorithm.valid():
		r.err = newError(ErrInvalidRequest, "The checksum algorithm is not supported.")
	case !decodeChecksum(&buf, algorithm, trimOWS(want)):
		if algorithm == ChecksumMD5 {
			r.err = newError(ErrInvalidDigest, "The Content-MD5 you specified was invalid.")
		} else {
			r.err = newError(ErrInvalidRequest, "Value for "+algorithm.HeaderName()+" header is invalid.")
		}
	default:
		r.h, r.size = algorithm.New(), algorithm.Size()
		copy(r.want[:], buf[:r.size])
	}
	return r
}

// holdBackReader passes a body through while hashing it, always keeping the
// last byte it has read until the body ended and the digest matched.
type holdBackReader struct {
	wire    io.Reader
	h       hash.Hash
	alg     ChecksumAlgorithm // 0: x-amz-content-sha256
	want    [maxChecksumSize]byte
	size    int
	length  int64 // -1 if unknown
	n       int64 // bytes read from wire
	held    byte
	hasHeld bool
	done    bool // verified; held may still be due
	err     error
	digest  [maxChecksumSize]byte
	one     [1]byte
}

func (r *holdBackReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.done {
		if r.hasHeld && len(p) > 0 {
			p[0], r.hasHeld = r.held, false
			return 1, nil
		}
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	for range maxEmptyReads {
		// The bytes not yet returned are the held one, then dst[:m]; with a
		// held byte p[0] is kept for it.
		dst := p
		if r.hasHeld {
			if len(p) > 1 {
				dst = p[1:]
			} else {
				dst = r.one[:]
			}
		}
		if r.length >= 0 && int64(len(dst)) > r.length-r.n+1 {
			// One byte more than is due, to notice a body that runs long.
			dst = dst[:r.length-r.n+1]
		}
		m, err := r.wire.Read(dst)
		if m > 0 {
			r.h.Write(dst[:m])
			r.n += int64(m)
			if r.length >= 0 && r.n > r.length {
				r.err = newError(ErrIncompleteBody, "The request body is longer than its declared length.")
				return 0, r.err
			}
		}
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			// A verification error of a reader underneath (a SHA-256 reader
			// under a checksum reader) already names what is wrong.
			var verr *Error
			if errors.As(err, &verr) {
				r.err = err
			} else {
				r.err = &bodyReadError{code: newError(ErrIncompleteBody, "The request body could not be read."), cause: err}
			}
			return 0, r.err
		}
		eof := err != nil
		if eof && !r.verify() {
			return 0, r.err
		}
		if m == 0 && !eof {
			continue
		}
		if !r.hasHeld {
			if eof {
				return m, nil
			}
			r.held, r.hasHeld = p[m-1], true
			if m > 1 {
				return m - 1, nil
			}
			continue
		}
		p[0] = r.held
		switch {
		case len(p) == 1:
			// dst was r.one: its byte, if any, is the new held one.
			r.hasHeld = m == 1
			r.held = r.one[0]
			return 1, nil
		case eof:
			r.hasHeld = false
			return 1 + m, nil
		default:
			r.held = p[m]
			return m, nil
		}
	}
	r.err = &bodyReadError{code: newError(ErrIncompleteBody, "The request body could not be read."), cause: io.ErrNoProgress}
	return 0, r.err
}

// verify runs at the end of the body: length, then digest.
func (r *holdBackReader) verify() bool {
	if r.length >= 0 && r.n < r.length {
		r.err = newError(ErrIncompleteBody, incompleteBodyMsg)
		return false
	}
	sum := r.h.Sum(r.digest[:0])
	if subtle.ConstantTimeCompare(sum, r.want[:r.size]) != 1 {
		switch r.alg {
		case 0:
			r.err = newError(ErrXAmzContentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed.")
		case ChecksumMD5:
			r.err = newError(ErrBadDigest, "The Content-MD5 you specified did not match what we received.")
		default:
			r.err = newError(ErrBadDigest, "The "+r.alg.String()+" you specified did not match the calculated checksum.")
		}
		return false
	}
	r.done = true
	return true
}
