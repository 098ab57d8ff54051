package gateway

import (
	"io"
	"net"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/s3proto"
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

// audit records the request's audit event: who (principal, actor,
// channel, access key id), what (op, bucket, key, copy source, batch size),
// the decision with its reason and policy ids, and the outcome (status,
// error code, bytes, latency). The event points into the state's buffers
// and lives in the state, so recording it allocates nothing. It never holds
// secrets, session tokens or signatures: none of them is kept on the
// request state.
func (s *Server) audit(st *reqState, latency time.Duration) {
	ev := &st.event
	*ev = governance.Event{
		Source:            governance.SourceS3,
		RequestID:         st.id[:],
		Remote:            st.remote,
		Method:            st.method,
		Action:            st.req.Op.String(),
		AccessKeyID:       st.akid,
		Bucket:            st.req.Bucket,
		Key:               st.req.Key,
		CopyBucket:        st.req.CopySourceBucket,
		CopyKey:           st.req.CopySourceKey,
		Prefix:            st.req.ListPrefix,
		IsList:            st.req.Op.IsList(),
		DeleteKeys:        st.deleteCount,
		Decision:          st.decision,
		Reason:            st.reason,
		PolicyIDs:         st.policyIDs,
		Status:            st.status,
		UpstreamRequestID: st.upRID,
		BytesIn:           st.bytesIn,
		BytesOut:          st.bytesOut,
		Latency:           latency,
	}
	switch {
	case st.cred.isRoot:
		ev.Principal = rootPrincipal
	case st.cred.verified:
		c := &st.cred.claims
		ev.Principal, ev.Actor, ev.Channel, ev.VendID = c.Principal, c.Actor, c.Channel, c.VendID
	}
	if st.err != nil {
		ev.Error = st.err.Code
	}
	if st.upstreamErr != nil {
		ev.UpstreamError = st.upstreamErr.Error()
	}
	if st.clientErr != nil {
		ev.ClientError = st.clientErr.Error()
	}
	ev.Coalesce = coalescable(st.req.Op, ev.Decision, ev.Status, ev.Error)
	s.auditSink.Record(ev)
	*ev = governance.Event{}
}

// coalescable reports whether an S3 request's audit event may share its
// trail row with the identical ones of the same batch (Event.Coalesce): an
// allowed, answered read of one object — what an engine repeats many times
// a second on one file (the footer, then each column chunk, each a range
// GET). The row counts them, spans their times and sums their bytes; every
// request keeps its own JSON audit line with its request id, client and
// range. A denial, a failure, a write, a delete, a copy or a listing keeps
// a row of its own.
func coalescable(op s3proto.Op, d governance.Outcome, status int, errCode string) bool {
	return (op == s3proto.OpGetObject || op == s3proto.OpHeadObject) && d == governance.OutcomeAllow &&
		status < 400 && errCode == ""
}

// rootPrincipal names the operator's root credential in audit events.
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
