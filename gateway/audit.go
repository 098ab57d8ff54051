package gateway

import (
	"io"
	"net"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewLogger returns a JSON-lines zap logger writing to w at level and above:
// one object per line with "ts" (RFC 3339, UTC), "level" and "msg". The
// gateway writes its access and audit lines with it; tests pass a buffer.
// Writes to w are serialised; wrap w in a zapcore.BufferedWriteSyncer to
// batch them.
func NewLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		TimeKey:        "ts",
		LevelKey:       "level",
		MessageKey:     "msg",
		NameKey:        "logger",
		EncodeTime:     zapcore.RFC3339NanoTimeEncoder,
		EncodeLevel:    zapcore.LowercaseLevelEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
		LineEnding:     zapcore.DefaultLineEnding,
	})
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level))
}

// auditMessage is the "msg" of every audit line, so a log pipeline can pick
// them out of the access log.
const auditMessage = "s3"

// audit writes the request's audit line: who (principal, actor, channel,
// access key id), what (op, bucket, key, copy source, batch size), the
// decision with its reason and policy ids, and the outcome (status, error
// code, bytes, latency). It never logs secrets, session tokens or
// signatures: none of them is kept on the request state.
func (s *Server) audit(st *reqState, status int, latencySeconds float64) {
	ce := s.auditLog.Check(zapcore.InfoLevel, auditMessage)
	if ce == nil {
		return
	}
	st.auditStatus, st.auditLatency = status, latencySeconds
	// One inline marshaler instead of a []zap.Field: the fields go straight
	// into the encoder, with no Field values to build and no []byte boxed
	// per field (measured: see BenchmarkAudit).
	// The field lives on the state: a variadic argument would escape.
	st.auditField[0] = zap.Inline((*auditLine)(st))
	ce.Write(st.auditField[:]...)
	st.auditField[0] = zap.Field{}
}

// auditLine is a reqState seen as its audit line's fields.
type auditLine reqState

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (a *auditLine) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	st := (*reqState)(a)
	enc.AddByteString("rid", st.id[:])
	enc.AddByteString("remote", st.remote)
	enc.AddByteString("method", st.method)
	enc.AddString("op", st.req.Op.String())
	enc.AddByteString("bucket", st.req.Bucket)
	enc.AddByteString("key", st.req.Key)
	if len(st.req.CopySourceBucket) > 0 {
		enc.AddByteString("copy_bucket", st.req.CopySourceBucket)
		enc.AddByteString("copy_key", st.req.CopySourceKey)
	}
	if st.req.Op.IsList() {
		enc.AddByteString("prefix", st.req.ListPrefix)
	}
	if st.deleteCount > 0 {
		enc.AddInt("delete_keys", st.deleteCount)
	}
	if len(st.akid) > 0 {
		enc.AddByteString("akid", st.akid)
	}
	switch {
	case st.cred.isRoot:
		enc.AddString("principal", rootPrincipal)
	case st.cred.verified:
		c := &st.cred.claims
		enc.AddString("principal", c.Principal)
		enc.AddString("actor", c.Actor)
		enc.AddString("channel", c.Channel)
		enc.AddString("vend_id", c.VendID)
	}
	enc.AddString("decision", st.decision.String())
	if st.reason != "" {
		enc.AddString("reason", st.reason)
	}
	if len(st.policyIDs) > 0 {
		_ = enc.AddArray("policies", stringArray(st.policyIDs))
	}
	enc.AddInt("status", st.auditStatus)
	if st.err != nil {
		enc.AddString("error", st.err.Code)
	}
	if len(st.upRID) > 0 {
		enc.AddByteString("upstream_rid", st.upRID)
	}
	if st.upstreamErr != nil {
		enc.AddString("upstream_error", st.upstreamErr.Error())
	}
	if st.clientErr != nil {
		enc.AddString("client_error", st.clientErr.Error())
	}
	enc.AddInt64("bytes_in", st.bytesIn)
	enc.AddInt64("bytes_out", st.bytesOut)
	enc.AddFloat64("latency_ms", st.auditLatency*1e3)
	return nil
}

type stringArray []string

func (a stringArray) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, s := range a {
		enc.AppendString(s)
	}
	return nil
}

// rootPrincipal names the operator's root credential in audit lines.
const rootPrincipal = "root"

// appendRemote appends the client address without allocating for TCP.
func appendRemote(dst []byte, a net.Addr) []byte {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort().AppendTo(dst)
	}
	if a == nil {
		return dst
	}
	return append(dst, a.String()...)
}
