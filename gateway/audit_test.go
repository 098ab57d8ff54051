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
		name string
		st   func(*reqState)
		want string
	}{
		{"minted GET allowed", func(st *reqState) {
			minted(st)
			st.req.Op, st.req.Bucket, st.req.Key = s3proto.OpGetObject, []byte("lake"), []byte("data/a")
			st.decision, st.reason, st.policyIDs = governance.OutcomeAllow, "ok", []string{"p1", "p2"}
			st.status, st.bytesOut, st.upRID = 200, 7, []byte("UP1")
		}, `rid=R remote=1.2.3.4:5 method=GET op=GetObject bucket=lake key=data/a akid=DLAKEXAMPLE principal=alice actor=agent channel=mcp vend_id=v1 decision=allow reason=ok policies=[p1 p2] status=200 upstream_rid=UP1 bytes_in=0 bytes_out=7 latency_ms=1.5`},
		{"copy denied", func(st *reqState) {
			minted(st)
			st.req.Op, st.req.Bucket, st.req.Key = s3proto.OpCopyObject, []byte("lake"), []byte("data/b")
			st.req.CopySourceBucket, st.req.CopySourceKey = []byte("src"), []byte("x")
			st.fail(s3proto.AccessDenied("no"), governance.OutcomeDeny, "no")
			st.status = 403
		}, `rid=R remote=1.2.3.4:5 method=GET op=CopyObject bucket=lake key=data/b copy_bucket=src copy_key=x akid=DLAKEXAMPLE principal=alice actor=agent channel=mcp vend_id=v1 decision=deny reason=no status=403 error=AccessDenied bytes_in=0 bytes_out=0 latency_ms=1.5`},
		{"list by root", func(st *reqState) {
			st.cred.isRoot = true
			st.req.Op, st.req.Bucket = s3proto.OpListObjectsV2, []byte("lake")
			st.decision, st.reason, st.status = governance.OutcomeAllow, "operator root credentials", 200
		}, `rid=R remote=1.2.3.4:5 method=GET op=ListObjectsV2 bucket=lake key= prefix= principal=root decision=allow reason=operator root credentials status=200 bytes_in=0 bytes_out=0 latency_ms=1.5`},
		{"batch delete, upstream down", func(st *reqState) {
			minted(st)
			st.req.Op, st.req.Bucket, st.deleteCount = s3proto.OpDeleteObjects, []byte("lake"), 3
			st.decision, st.status, st.bytesIn = governance.OutcomeAllow, 503, 120
			st.upstreamErr, st.clientErr = errors.New("dial tcp: refused"), io.ErrClosedPipe
			st.err = s3proto.ServiceUnavailable("")
		}, `rid=R remote=1.2.3.4:5 method=GET op=DeleteObjects bucket=lake key= delete_keys=3 akid=DLAKEXAMPLE principal=alice actor=agent channel=mcp vend_id=v1 decision=allow status=503 error=ServiceUnavailable upstream_error=dial tcp: refused client_error=io: read/write on closed pipe bytes_in=120 bytes_out=0 latency_ms=1.5`},
		{"unauthenticated", func(st *reqState) {
			st.akid = []byte("NOPE")
			st.fail(s3proto.InvalidURI(""), governance.OutcomeNone, "request not understood")
			st.status = 400
		}, `rid=R remote=1.2.3.4:5 method=GET op=Unknown bucket= key= akid=NOPE decision=none reason=request not understood status=400 error=InvalidURI bytes_in=0 bytes_out=0 latency_ms=1.5`},
	}
	for _, tc := range cases {
		st := &reqState{srv: s, remote: []byte("1.2.3.4:5"), method: []byte("GET")}
		copy(st.id[:], "R")
		tc.st(st)
		buf.Reset()
		s.audit(st, 1500*time.Microsecond)
		got := flatten(t, buf.Bytes())
		got = strings.Replace(got, "rid=R"+strings.Repeat("\x00", 15), "rid=R", 1)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
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
