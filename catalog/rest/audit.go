package rest

import (
	"net"
	"net/netip"
	"time"

	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
)

// audited reports whether a route's requests are audit events: reads that
// hand out table metadata or storage access (LoadTable, vending, remote
// signatures) and every change (DDL, commits).
func audited(a governance.Action) bool {
	switch a {
	case governance.ActionLoadTable, governance.ActionLoadCredentials, governance.ActionSignRequest:
		return true
	}
	return a.IsWrite() && a != governance.ActionAdminGovernance // governance authoring has its own trail
}

// mustBeDurable reports whether an event must be on the trail before the
// answer goes out: the decisions of reads that hand out storage access
// (vending, signatures, a LoadTable with vended credentials) and every
// denial.
func mustBeDurable(a governance.Action, d governance.Outcome, metadataOnly bool) bool {
	return d == governance.OutcomeDeny || a == governance.ActionLoadTable && !metadataOnly ||
		a == governance.ActionLoadCredentials || a == governance.ActionSignRequest
}

// mustBeChecked reports whether an event that need not be durable must
// still never be answered unrecorded: an allowed LoadTable that handed out
// metadata and no credential. It discloses what the table's metadata file
// does, whose reads at the gateway are audited from the same buffer; it
// goes through that buffer (governance.RecordChecked), and is refused when
// the buffer is full or the trail is down.
func mustBeChecked(a governance.Action) bool { return a == governance.ActionLoadTable }

// audit records r's event when its route is audited, once the handler has
// answered and before fasthttp writes the answer. When an event that must
// be durable cannot be written, the answer becomes a 503: a read the trail
// does not know of is not served (fail closed).
func (s *Server) audit(r *request, rt *route, start time.Time) {
	if rt == nil || rt.public || !audited(rt.action) || s.sink == nil {
		return
	}
	// The event is built in pooled scratch: handed to a Sink (an
	// interface) it would escape, with its bytes, on every audited
	// request — most of them LoadTable cache hits that allocate little
	// else. Sinks copy what they keep before they return.
	sc, _ := s.auditScratch.Get().(*auditScratch)
	if sc == nil {
		sc = new(auditScratch)
	}
	defer s.auditScratch.Put(sc)
	status := r.rc.Response.StatusCode()
	sc.ev = governance.Event{
		Source: governance.SourceCatalog, RequestID: r.rc.Request.Header.Peek("X-Request-Id"),
		Remote: appendAddr(sc.remote[:0], r.rc.RemoteAddr()), Method: r.rc.Method(), Action: rt.action.String(),
		Channel: governance.ChannelREST, Namespace: r.ns, Table: r.table, View: r.view,
		Status: status, Latency: s.now().Sub(start),
	}
	ev := &sc.ev
	defer func() { *ev = governance.Event{} }() // no request's bytes kept in the pool
	if r.p != nil {
		ev.Principal, ev.Actor = r.p.Subject, governance.ActorHuman
	}
	switch {
	case status < 400:
		ev.Decision = governance.OutcomeAllow
	case status == 401 || status == 403:
		ev.Decision = governance.OutcomeDeny
	}
	if r.err != nil {
		ev.Error, ev.Reason = r.err.Type, r.err.Message
	} else if r.reason != "" {
		ev.Reason, ev.PolicyIDs = r.reason, r.policies
	}
	durable := mustBeDurable(rt.action, ev.Decision, r.metadataOnly)
	if !durable && !mustBeChecked(rt.action) {
		s.sink.Record(ev)
		return
	}
	// The request's own context may be spent (its deadline, a client gone):
	// the trail gets its own bound, a context that arms no timer unless the
	// write has to wait (a buffered event does not).
	ctx := &reqContext{deadline: time.Now().Add(s.cfg.RequestTimeout)}
	defer ctx.release()
	record := governance.RecordSync
	if !durable {
		// A metadata-only LoadTable: read at rates no trail could take a
		// row each for, identical ones share a row with a count.
		record, ev.Coalesce = governance.RecordChecked, true
	}
	if err := record(ctx, s.sink, ev); err != nil {
		s.log.Error("catalog: audit event not written; the answer is withheld", zap.String("route", rt.pattern), zap.Error(err))
		if status < 400 {
			s.writeErrorFor(r.rc, r, errorf(503, TypeServiceUnavailable, "the audit trail is unavailable; retry later"))
		}
	}
}

// auditScratch is where audit builds one event (Server.auditScratch).
type auditScratch struct {
	ev     governance.Event
	remote [64]byte
}

// appendAddr appends a client address as host:port to b, without the
// allocations of net.Addr's String for the TCP addresses every request has.
func appendAddr(b []byte, a net.Addr) []byte {
	if t, ok := a.(*net.TCPAddr); ok {
		// Unmapped, as String prints an IPv4 client of a dual-stack socket.
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).AppendTo(b)
	}
	if a == nil {
		return b
	}
	return append(b, a.String()...)
}
