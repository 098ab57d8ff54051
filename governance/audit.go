package governance

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Outcome is an audited decision.
type Outcome uint8

// The outcomes. OutcomeNone: the request was refused before any decision
// (it could not be parsed or authenticated far enough to ask).
const (
	OutcomeNone Outcome = iota
	OutcomeAllow
	OutcomeDeny
)

// String is "none", "allow" or "deny".
func (o Outcome) String() string {
	switch o {
	case OutcomeAllow:
		return "allow"
	case OutcomeDeny:
		return "deny"
	}
	return "none"
}

// OutcomeOf is the outcome of d.
func OutcomeOf(d Decision) Outcome {
	if d.Allow {
		return OutcomeAllow
	}
	return OutcomeDeny
}

// Sources of audit events: the gateway's are S3 requests, the catalog's
// its routes. They are the "msg" of a JSON audit line.
const (
	SourceS3      = "s3"
	SourceCatalog = "catalog"
)

// Event is one audited request, from the gateway or the catalog: who
// (principal, actor, channel, delegator, credential), what (action,
// object), the decision with its reason and policy ids, and the outcome
// (status, error code, bytes, latency). It never holds a secret, a session
// token or a signature.
//
// Byte slices are borrowed from the request: a Sink must copy what it keeps
// before Record returns. Zero fields are left out of the record, except
// that an S3 event always names its request id, client, method, bucket and
// key.
type Event struct {
	Source    string // SourceS3 or SourceCatalog
	RequestID []byte
	Remote    []byte // the client's address
	Method    []byte // the HTTP method
	Action    string // the S3 operation ("GetObject") or catalog action ("LoadTable")

	Principal string
	Actor     string
	Channel   string
	Delegator string // the broker that asserted the principal, if any
	// AccessKeyID and VendID name the credential (minted credentials).
	AccessKeyID []byte
	VendID      string

	Bucket, Key            []byte
	CopyBucket, CopyKey    []byte // a copy source
	Prefix                 []byte // a list prefix (with IsList)
	IsList                 bool
	DeleteKeys             int // keys of a DeleteObjects body
	Namespace, Table, View string

	Decision  Outcome
	Reason    string
	PolicyIDs []string

	Status            int
	Error             string // the error code answered (S3 code or ErrorModel type)
	UpstreamRequestID []byte
	UpstreamError     string
	ClientError       string
	BytesIn, BytesOut int64
	Latency           time.Duration

	// Coalesce marks an event the Postgres trail may fold into one row with
	// the identical events written in the same batch (same source, action,
	// principal, actor, channel, delegator, object, decision, reason,
	// policy ids, status and error): the row counts them, keeps the first's
	// time and request id and the last's time, sums their bytes and keeps
	// the worst latency. Set for what is read at a rate no trail could take
	// a row each for — a LoadTable that hands out metadata only, the
	// gateway's allowed reads of one object — never for a decision that
	// must be durable, nor for a denial. Every event still goes to the JSON
	// audit log one line each.
	Coalesce bool

	// zapField is ZapSink's scratch: the field handed to zap lives here,
	// with the event, because a variadic argument built in Record would
	// escape to the heap on every event.
	zapField [1]zap.Field
}

// Sink receives audit events. Record must not block the request for long
// nor keep ev or its slices after it returns. Implementations are safe for
// concurrent use.
type Sink interface {
	Record(ev *Event)
}

// Discard is a Sink that drops every event.
var Discard Sink = discard{}

type discard struct{}

func (discard) Record(*Event) {}

// Tee is a Sink that records every event in each of sinks, in order.
func Tee(sinks ...Sink) Sink { return tee(sinks) }

type tee []Sink

func (t tee) Record(ev *Event) {
	for _, s := range t {
		s.Record(ev)
	}
}

// SyncSink is a Sink that can also record an event durably before it
// returns: what a decision that must be on the trail before its answer
// goes out (a LoadTable, a vend, a signature, a denial) is recorded with.
type SyncSink interface {
	Sink
	RecordSync(ctx context.Context, ev *Event) error
}

// RecordSync records ev in s durably when s can (SyncSink), else as
// Record does; a failure means ev may not be on the trail.
func RecordSync(ctx context.Context, s Sink, ev *Event) error {
	return recordAs(ctx, s, ev, SyncSink.RecordSync)
}

// recordAs records ev in s with record when s is an S, else as Record
// does.
func recordAs[S Sink](ctx context.Context, s Sink, ev *Event, record func(S, context.Context, *Event) error) error {
	if ss, ok := s.(S); ok {
		return record(ss, ctx, ev)
	}
	s.Record(ev)
	return nil
}

// RecordSync records ev in each sink, durably in those that can; the
// first failure is returned after every sink has had the event.
func (t tee) RecordSync(ctx context.Context, ev *Event) error {
	return t.each(ctx, ev, RecordSync)
}

// each records ev in every sink with record; the first failure is
// returned after every sink has had the event.
func (t tee) each(ctx context.Context, ev *Event, record func(context.Context, Sink, *Event) error) error {
	var first error
	for _, s := range t {
		if err := record(ctx, s, ev); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// CheckedSink is a Sink that can refuse an event instead of dropping it:
// RecordChecked queues ev as Record does and reports when it could not
// (the buffer is full, the store is down, the sink is closed). What may go
// on the trail after its answer, but must never be answered unrecorded (a
// LoadTable that hands out metadata and no credential), is recorded with
// it, and refused when it fails.
type CheckedSink interface {
	Sink
	RecordChecked(ctx context.Context, ev *Event) error
}

// RecordChecked records ev in s, checked when s can (CheckedSink), else as
// Record does; a failure means ev may never reach the trail.
func RecordChecked(ctx context.Context, s Sink, ev *Event) error {
	return recordAs(ctx, s, ev, CheckedSink.RecordChecked)
}

// RecordChecked records ev in each sink, checked in those that can; the
// first failure is returned after every sink has had the event.
func (t tee) RecordChecked(ctx context.Context, ev *Event) error {
	return t.each(ctx, ev, RecordChecked)
}

// ZapSink writes each event as one JSON line through l at info level,
// its message the event's Source. Wrap l's output in a
// zapcore.BufferedWriteSyncer to batch the writes.
type ZapSink struct {
	l *zap.Logger
}

// NewZapSink returns a ZapSink writing through l.
func NewZapSink(l *zap.Logger) *ZapSink { return &ZapSink{l: l} }

// Record implements Sink. It allocates nothing of its own: the event's
// fields go straight into the encoder. Events recorded concurrently must
// be distinct values (each request has its own).
func (z *ZapSink) Record(ev *Event) {
	ce := z.l.Check(zapcore.InfoLevel, ev.Source)
	if ce == nil {
		return
	}
	ev.zapField[0] = zap.Inline((*eventFields)(ev))
	ce.Write(ev.zapField[:]...)
	ev.zapField[0] = zap.Field{}
}

// eventFields is an Event seen as a zapcore.ObjectMarshaler.
type eventFields Event

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (e *eventFields) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	addBytes := func(k string, v []byte) {
		if len(v) > 0 {
			enc.AddByteString(k, v)
		}
	}
	addString := func(k, v string) {
		if v != "" {
			enc.AddString(k, v)
		}
	}
	if e.Source == SourceS3 {
		// The gateway's lines always carry these fields, empty or not:
		// log pipelines index them.
		enc.AddByteString("rid", e.RequestID)
		enc.AddByteString("remote", e.Remote)
		enc.AddByteString("method", e.Method)
		addString("op", e.Action)
		enc.AddByteString("bucket", e.Bucket)
		enc.AddByteString("key", e.Key)
	} else {
		addBytes("rid", e.RequestID)
		addBytes("remote", e.Remote)
		addBytes("method", e.Method)
		addString("op", e.Action)
		addBytes("bucket", e.Bucket)
		addBytes("key", e.Key)
	}
	if len(e.CopyBucket) > 0 {
		enc.AddByteString("copy_bucket", e.CopyBucket)
		enc.AddByteString("copy_key", e.CopyKey)
	}
	if e.IsList {
		enc.AddByteString("prefix", e.Prefix)
	}
	if e.DeleteKeys > 0 {
		enc.AddInt("delete_keys", e.DeleteKeys)
	}
	addString("namespace", e.Namespace)
	addString("table", e.Table)
	addString("view", e.View)
	addBytes("akid", e.AccessKeyID)
	if e.Principal != "" {
		enc.AddString("principal", e.Principal)
		addString("actor", e.Actor)
		addString("channel", e.Channel)
		addString("delegator", e.Delegator)
		addString("vend_id", e.VendID)
	}
	enc.AddString("decision", e.Decision.String())
	addString("reason", e.Reason)
	if len(e.PolicyIDs) > 0 {
		_ = enc.AddArray("policies", stringArray(e.PolicyIDs))
	}
	enc.AddInt("status", e.Status)
	addString("error", e.Error)
	addBytes("upstream_rid", e.UpstreamRequestID)
	addString("upstream_error", e.UpstreamError)
	addString("client_error", e.ClientError)
	enc.AddInt64("bytes_in", e.BytesIn)
	enc.AddInt64("bytes_out", e.BytesOut)
	enc.AddFloat64("latency_ms", float64(e.Latency)/float64(time.Millisecond))
	return nil
}

type stringArray []string

func (a stringArray) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for _, s := range a {
		enc.AppendString(s)
	}
	return nil
}
