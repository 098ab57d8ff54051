package sigv4

import "io"

// ChunkedConfig fills cfg for decoding the aws-chunked body of a request
// verified in a streaming payload mode. MaxChunkSize is left to the caller.
func (res *Result) ChunkedConfig(cfg *ChunkedConfig) {
	*cfg = ChunkedConfig{
		Signed:        res.Mode == PayloadStreamingSigned || res.Mode == PayloadStreamingSignedTrailer,
		SigningKey:    res.SigningKey,
		AmzDate:       res.AmzDate(),
		Scope:         res.Scope(),
		SeedSignature: res.Signature,
		DecodedLength: res.DecodedContentLength,
		MaxChunkSize:  cfg.MaxChunkSize,
	}
	if res.Mode != PayloadStreamingSigned {
		cfg.Trailer = res.trailer
	}
}

var errShortStreamingBody = &Error{ErrIncompleteBody,
	"Content-Length is smaller than x-amz-decoded-content-length"}

// Body wraps the wire body in the reader the payload mode needs: verified
// aws-chunked decoding, SHA-256 checked at EOF, or the body as is for
// UNSIGNED-PAYLOAD (cut at, and required to reach, contentLength).
// contentLength is the wire length, -1 if unknown. The reader copies what it
// needs from res, which may be reused once Body returns. Read errors are
// *Error values (IncompleteBody, XAmzContentSHA256Mismatch, …) or wrap the
// wire's error.
func (res *Result) Body(wire io.Reader, contentLength int64) (io.Reader, error) {
	switch res.Mode {
	case PayloadUnsigned:
		if contentLength < 0 {
			return wire, nil
		}
		return &exactReader{r: wire, n: contentLength}, nil
	case PayloadSHA256:
		return NewSHA256Reader(wire, res.PayloadHash, contentLength), nil
	}
	if res.DecodedContentLength < 0 {
		return nil, errMissingDecodedLength
	}
	if contentLength >= 0 && contentLength < res.DecodedContentLength {
		return nil, errShortStreamingBody
	}
	var cfg ChunkedConfig
	res.ChunkedConfig(&cfg)
	return NewChunkedReader(wire, &cfg), nil
}

var errIncompleteBody = &Error{ErrIncompleteBody,
	"You did not provide the number of bytes specified by the Content-Length HTTP header."}

// exactReader reads exactly n bytes; an early end is IncompleteBody, not a
// silently short body.
type exactReader struct {
	r io.Reader
	n int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= int64(n)
	switch {
	case e.n == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, errIncompleteBody
	}
	return n, err
}
