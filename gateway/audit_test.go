package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/creds"
	"github.com/duckicelake/duckicelake/internal/s3proto"
)

// TestAuditFields pins the audit line of each kind of request, field by
// field and in order: log pipelines parse these lines, so their shape is
// part of the gateway's interface.
func TestAuditFields(t *testing.T) {
	var buf bytes.Buffer
	keyring, err := creds.NewKeyring(creds.Key{ID: "k", Secret: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Upstream: UpstreamConfig{Endpoint: "http://127.0.0.1:1", AccessKeyID: "k", SecretAccessKey: "s"}},
		Deps{Audit: governance.NewZapSink(NewLogger(&buf, zap.InfoLevel)), Keyring: keyring})
	if err != nil {
		t.Fatal(err)
	}
	minted := func(st *reqState) {
		st.akid = []byte("DLAKEXAMPLE")
		st.cred.verified = true
		st.cred.claims = creds.Claims{Principal: "alice", Actor: "agent", Channel: "mcp", VendID: "v1"}
	}
	cases := []struct {
		name     string
		st       func(*reqState)
		want     string
		coalesce bool // the trail may fold it with identical events
	}{
		{"minted GET allowed", func(st *reqState) {
			minted(st)
			st.req.Op, st.req.Bucket, st.req.Key = s3proto.OpGetObject, []byte("lake"), []byte("data/a")
			st.decision, st.reason, st.policyIDs = governance.OutcomeAllow, "ok", []string{"p1", "p2"}
			st.status, st.bytesOut, st.upRID = 200, 7, []byte("UP1")
		}, `rid=R remote=1.2.3.4:5 method=GET op=GetObject bucket=lake key=data/a akid=DLAKEXAMPLE principal=alice actor=agent channel=mcp vend_id=v1 decision=allow reason=ok policies=[p1 p2] status=200 upstream_rid=UP1 bytes_in=0 bytes_out=7 latency_ms=1.5`, true},
		{"copy denied", func(st *reqState) {
			minted(st)
			st.req.Op, st.req.Bucket, st.req.Key = s3proto.OpCopyObject, []byte("lake"), []byte("data/b")
			st.req.CopySourceBucket, st.req.CopySourceKey = []byte("src"), []byte("x")
			st.fail(s3proto.AccessDenied("no"), governance.OutcomeDeny, "no")
			st.status = 403
		}, `rid=R remote=1.2.3.4:5 method=GET op=CopyObject bucket=lake key=data/b copy_bucket=src copy_key=x akid=DLAKEXAMPLE principal=alice actor=agent channel=mcp vend_id=v1 decision=deny reason=no status=403 error=AccessDenied bytes_in=0 bytes_out=0 latency_ms=1.5`, false},
		{"list by root", func(st *reqState) {
			st.cred.isRoot = true
			st.req.Op, st.req.Bucket = s3proto.OpListObjectsV2, []byte("lake")
			st.decision, st.reason, st.status = governance.OutcomeAllow, "operator root credentials", 200
		}, `rid=R remote=1.2.3.4:5 method=GET op=ListObjectsV2 bucket=lake key= prefix= principal=root decision=allow reason=operator root credentials status=200 bytes_in=0 bytes_out=0 latency_ms=1.5`, false},
		{"batch delete, upstream down", func(st *reqState) {
			minted(st)
			st.req.Op, st.req.Bucket, st.deleteCount = s3proto.OpDeleteObjects, []byte("lake"), 3
			st.decision, st.status, st.bytesIn = governance.OutcomeAllow, 503, 120
			st.upstreamErr, st.clientErr = errors.New("dial tcp: refused"), io.ErrClosedPipe
			st.err = s3proto.ServiceUnavailable("")
		}, `rid=R remote=1.2.3.4:5 method=GET op=DeleteObjects bucket=lake key= delete_keys=3 akid=DLAKEXAMPLE principal=alice actor=agent channel=mcp vend_id=v1 decision=allow status=503 error=ServiceUnavailable upstream_error=dial tcp: refused client_error=io: read/write on closed pipe bytes_in=120 bytes_out=0 latency_ms=1.5`, false},
		{"unauthenticated", func(st *reqState) {
			st.akid = []byte("NOPE")
			st.fail(s3proto.InvalidURI(""), governance.OutcomeNone, "request not understood")
			st.status = 400
		}, `rid=R remote=1.2.3.4:5 method=GET op=Unknown bucket= key= akid=NOPE decision=none reason=request not understood status=400 error=InvalidURI bytes_in=0 bytes_out=0 latency_ms=1.5`, false},
	}
	var coalesced []bool
	s.auditSink = governance.Tee(s.auditSink, sinkFunc(func(ev *governance.Event) { coalesced = append(coalesced, ev.Coalesce) }))
	for i, tc := range cases {
		st := &reqState{srv: s, remote: []byte("1.2.3.4:5"), method: []byte("GET")}
		copy(st.id[:], "R")
		tc.st(st)
		buf.Reset()
		s.audit(st, 1500*time.Microsecond)
		if coalesced[i] != tc.coalesce {
			t.Errorf("%s: Coalesce = %v, want %v", tc.name, coalesced[i], tc.coalesce)
		}
		got := flatten(t, buf.Bytes())
		got = strings.Replace(got, "rid=R"+strings.Repeat("\x00", 15), "rid=R", 1)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// sinkFunc is a governance.Sink calling itself.
type sinkFunc func(*governance.Event)

func (f sinkFunc) Record(ev *governance.Event) { f(ev) }

// Only an allowed, answered read of one object may share a trail row:
// never a denial, a failure, a write or a listing.
func TestCoalescable(t *testing.T) {
	allow, deny := governance.OutcomeAllow, governance.OutcomeDeny
	for _, tc := range []struct {
		op     s3proto.Op
		d      governance.Outcome
		status int
		err    string
		want   bool
	}{
		{s3proto.OpGetObject, allow, 200, "", true},
		{s3proto.OpGetObject, allow, 206, "", true},
		{s3proto.OpHeadObject, allow, 304, "", true},
		{s3proto.OpGetObject, deny, 403, "AccessDenied", false},
		{s3proto.OpGetObject, allow, 404, "NoSuchKey", false},
		{s3proto.OpGetObject, allow, 200, "InternalError", false}, // a stream cut after the headers
		{s3proto.OpGetObject, governance.OutcomeNone, 400, "", false},
		{s3proto.OpPutObject, allow, 200, "", false},
		{s3proto.OpCopyObject, allow, 200, "", false},
		{s3proto.OpDeleteObject, allow, 204, "", false},
		{s3proto.OpDeleteObjects, allow, 200, "", false},
		{s3proto.OpListObjectsV2, allow, 200, "", false},
		{s3proto.OpGetObjectTagging, allow, 200, "", false},
	} {
		if got := coalescable(tc.op, tc.d, tc.status, tc.err); got != tc.want {
			t.Errorf("coalescable(%v, %v, %d, %q) = %v", tc.op, tc.d, tc.status, tc.err, got)
		}
	}
}

// flatten renders a JSON line as "key=value" pairs in order, without the
// logger's own ts, level and msg (which must be "s3").
func flatten(t *testing.T, line []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", line)
	}
	var out []string
	for dec.More() {
		k, _ := dec.Token()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		switch k {
		case "ts", "level":
			continue
		case "msg":
			if v != "s3" {
				t.Errorf("msg = %v", v)
			}
			continue
		}
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(out, " ")
}
