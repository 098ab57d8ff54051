// Package pct is percent-encoding (RFC 3986) as S3 and SigV4 read and
// write it, and hex digits: the one decoder and encoder that the SigV4
// canonicaliser, the S3 request classifier and the catalog's router share,
// so that a key is decoded the same way wherever it is checked.
//
// Decoding never repairs: a '%' not followed by two hex digits makes the
// whole input invalid, and '+' is a space only where the caller says so
// (query strings; in a path it is a literal plus). Encoding is SigV4's
// UriEncode: the unreserved bytes (A-Z a-z 0-9 - . _ ~) as they are, every
// other byte as %XX in upper case. Nothing here allocates beyond the
// destination slices callers pass.
//
// pct imports only the standard library; sigv4, internal/s3proto and
// catalog/rest import it. It is a leaf of its own (rather than part of
// sigv4) because the catalog's path decoding has nothing to do with
// signatures, and s3proto, which imports sigv4, needs it too.
package pct
