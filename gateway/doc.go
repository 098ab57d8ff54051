// Package gateway is the S3-compatible reverse proxy: it classifies each
// request (operation, bucket, every key it touches), verifies its SigV4
// signature against a minted credential, authorises it, re-signs it with the
// upstream's root key and streams it through, answering S3 XML errors.
package gateway
