// Package gateway is the S3-compatible reverse proxy: for each request it
// classifies what the request touches (internal/s3proto), verifies its
// SigV4 signature against a minted credential or the operator's root
// credential (sigv4, internal/creds), admits it (governance.AdmitS3: the
// credential's grants over every key, then the one Authorizer serve hands
// the gateway and the catalog alike), re-signs it with the upstream's root
// key and streams it through, answering S3 XML errors (s3proto.Error). It
// records one audit event per request through a governance.Sink and
// Prometheus metrics. A browser-form upload (POST Object) is authenticated
// by its form's signed policy and admitted as the PutObject of the form's
// key (postobject.go). Connections are admitted before fasthttp sees them,
// within a total and a per-address limit (conns.go); responses carry one
// request id, the gateway's (answer.go); an upstream's answer to an upload
// it has not read is relayed (early.go).
//
// The hot path allocates nothing per request: everything a request needs
// lives in a pooled reqState, the audit event and the admission buffers
// included (BenchmarkAudit, the zero-allocation tests).
//
// gateway may import sigv4, governance, internal/s3proto, internal/pct,
// internal/creds, internal/httplimit, internal/defaults, fasthttp, zap and
// Prometheus; nothing of the catalog imports it, and it imports nothing of
// the catalog.
package gateway
