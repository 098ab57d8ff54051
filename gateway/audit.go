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
	fields := st.fields[:0]
	fields = append(fields,
		zap.ByteString("rid", st.id[:]),
		zap.ByteString("remote", st.remote),
		zap.ByteString("method", st.method),
		zap.String("op", st.req.Op.String()),
		zap.ByteString("bucket", st.req.Bucket),
		zap.ByteString("key", st.req.Key),
	)
	if len(st.req.CopySourceBucket) > 0 {
		fields = append(fields,
			zap.ByteString("copy_bucket", st.req.CopySourceBucket),
			zap.ByteString("copy_key", st.req.CopySourceKey))
	}
	if st.req.Op.IsList() {
		fields = append(fields, zap.ByteString("prefix", st.req.ListPrefix))
	}
	if st.deleteCount > 0 {
		fields = append(fields, zap.Int("delete_keys", st.deleteCount))
	}
	if len(st.akid) > 0 {
		fields = append(fields, zap.ByteString("akid", st.akid))
	}
	switch {
	case st.cred.isRoot:
		fields = append(fields, zap.String("principal", rootPrincipal))
	case st.cred.verified:
		c := &st.cred.claims
		fields = append(fields,
			zap.String("principal", c.Principal),
			zap.String("actor", c.Actor),
			zap.String("channel", c.Channel),
			zap.String("vend_id", c.VendID))
	}
	fields = append(fields, zap.String("decision", st.decision.String()))
	if st.reason != "" {
		fields = append(fields, zap.String("reason", st.reason))
	}
	if len(st.policyIDs) > 0 {
		fields = append(fields, zap.Strings("policies", st.policyIDs))
	}
	fields = append(fields, zap.Int("status", status))
	if st.err != nil {
		fields = append(fields, zap.String("error", st.err.Code))
	}
	if len(st.upRID) > 0 {
		fields = append(fields, zap.ByteString("upstream_rid", st.upRID))
	}
	if st.upstreamErr != nil {
		fields = append(fields, zap.String("upstream_error", st.upstreamErr.Error()))
	}
	if st.clientErr != nil {
		fields = append(fields, zap.String("client_error", st.clientErr.Error()))
	}
	fields = append(fields,
		zap.Int64("bytes_in", st.bytesIn),
		zap.Int64("bytes_out", st.bytesOut),
		zap.Float64("latency_ms", latencySeconds*1e3),
	)
	ce.Write(fields...)
	clear(fields)
	st.fields = fields[:0]
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
