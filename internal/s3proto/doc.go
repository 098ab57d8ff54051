// Package s3proto is the S3 protocol model the gateway and the catalog's
// remote signer share, so that a request is understood the same way on
// both paths: the classifier (Classifier, Request: the operation and every
// key a request touches, decoded exactly once, with the key shapes no
// backend should see refused), the operations (Op) with the grant access
// each needs, the upstream forms of a classified request (AppendPath,
// AppendCopySource, AppendForwardQuery), DeleteObjects body parsing, S3 XML
// errors (Error, its constructors, AppendXML, FromSigV4, ReplaceRequestID
// for a backend's), and browser-form uploads (ParsePostFormHead,
// ParsePostPolicy and its Check, PostFormKey, ClassifyPostField).
//
// It reads bytes and a sigv4.HeaderReader, never an HTTP framework's types,
// and its hot paths (Classify, AppendPath, AppendXML) allocate nothing
// beyond the buffers a Request owns and reuses.
//
// s3proto may import sigv4 (its header reader and error codes),
// internal/pct (percent and hex decoding), internal/creds (the access bits
// of a grant) and the standard library. It decides nothing about who may do
// what: the scope check and authorisation are governance's (AdmitS3).
package s3proto
