package governance

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/duckicelake/duckicelake/internal/testsupport"
)

func newTestSink(buf *bytes.Buffer) *ZapSink {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg", LineEnding: "\n"})
	return NewZapSink(zap.New(zapcore.NewCore(enc, zapcore.AddSync(buf), zapcore.InfoLevel)))
}

func TestZapSinkFields(t *testing.T) {
	var buf bytes.Buffer
	s := newTestSink(&buf)
	s.Record(&Event{
		Source: SourceCatalog, RequestID: []byte("r1"), Action: "LoadTable",
		Principal: "bob", Actor: ActorAgent, Channel: ChannelMCP, Delegator: "broker",
		Namespace: "analytics", Table: "customers",
		Decision: OutcomeDeny, Reason: "not granted", PolicyIDs: []string{"p1", "p2"},
		Status: 404, Error: "NoSuchTableException", Latency: 1500 * time.Microsecond,
	})
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	want := map[string]any{
		"msg": "catalog", "rid": "r1", "op": "LoadTable", "principal": "bob", "actor": "agent",
		"channel": "mcp", "delegator": "broker", "namespace": "analytics", "table": "customers",
		"decision": "deny", "reason": "not granted", "status": float64(404),
		"error": "NoSuchTableException", "latency_ms": 1.5, "bytes_in": float64(0), "bytes_out": float64(0),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if p, _ := got["policies"].([]any); len(p) != 2 {
		t.Errorf("policies = %v", got["policies"])
	}
	for _, absent := range []string{"bucket", "key", "prefix", "akid", "vend_id", "upstream_rid"} {
		if _, ok := got[absent]; ok {
			t.Errorf("catalog event has %s", absent)
		}
	}
}

func TestZapSinkS3Line(t *testing.T) {
	var buf bytes.Buffer
	newTestSink(&buf).Record(&Event{Source: SourceS3, Action: "ListObjectsV2", IsList: true, Decision: OutcomeAllow})
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"rid", "remote", "method", "bucket", "key", "prefix"} {
		if v, ok := got[k]; !ok || v != "" {
			t.Errorf("S3 line %s = %v, %v; want an empty string", k, v, ok)
		}
	}
	if got["msg"] != "s3" || got["decision"] != "allow" {
		t.Errorf("line = %v", got)
	}
}

func TestZapSinkAllocatesNothing(t *testing.T) {
	testsupport.SkipUnderRace(t, "counts allocations")
	s := NewZapSink(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"}),
		zapcore.AddSync(discardWriter{}), zapcore.InfoLevel)))
	ev := &Event{Source: SourceS3, RequestID: []byte("0123456789abcdef"), Action: "GetObject",
		Bucket: []byte("lake"), Key: []byte("data/a/t/f.parquet"), Principal: "p", Actor: ActorHuman,
		Channel: ChannelREST, Decision: OutcomeAllow, Reason: "ok", Status: 200, BytesOut: 1024}
	s.Record(ev) // warm the encoder pool
	if n := testing.AllocsPerRun(200, func() { s.Record(ev) }); n > 0 {
		t.Errorf("Record allocates %.1f times per event", n)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkZapSink(b *testing.B) {
	s := NewZapSink(zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"}),
		zapcore.AddSync(discardWriter{}), zapcore.InfoLevel)))
	ev := &Event{Source: SourceS3, RequestID: []byte("0123456789abcdef"), Action: "GetObject",
		Bucket: []byte("lake"), Key: []byte("data/a/t/f.parquet"), Principal: "p", Decision: OutcomeAllow, Status: 200}
	b.ReportAllocs()
	for b.Loop() {
		s.Record(ev)
	}
}
