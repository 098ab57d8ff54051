package rest

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/internal/httplimit"
)

// Listener is what the catalog's listener answers before a handler runs,
// in the Iceberg ErrorModel (fasthttp's own answers are plain text): the
// requests the web server could not read (ErrorHandler) and the
// connections its admission limits refuse (Refuse). Serve wires both with
// an httplimit.Limiter; the gateway answers the same events in S3 XML.
type Listener struct {
	Log     *zap.Logger
	Limiter *httplimit.Limiter

	refuser    httplimit.Refuser
	refusalLog httplimit.LogRate
}

// ErrorHandler is fasthttp's ErrorHandler: a request the server could not
// read (header section over the read buffer, body over MaxRequestBodySize,
// a timeout, not HTTP) is answered in the ErrorModel and logged.
func (l *Listener) ErrorHandler(ctx *fasthttp.RequestCtx, err error) {
	var e *Error
	switch httplimit.ParseFailureOf(err) {
	case httplimit.HeaderTooLarge:
		e = errorf(fasthttp.StatusRequestHeaderFieldsTooLarge, TypeBadRequest, "the request's header section is too large")
	case httplimit.BodyTooLarge:
		e = errorf(fasthttp.StatusRequestEntityTooLarge, TypeBadRequest, "the request body is too large")
	case httplimit.Timeout:
		e = errorf(fasthttp.StatusRequestTimeout, TypeBadRequest, "the request did not arrive in time")
	default:
		e = badRequest("the request could not be parsed as HTTP/1.1")
	}
	ctx.Response.Reset()
	writeModel(&ctx.Response, e)
	ctx.SetConnectionClose()
	l.Log.Info("catalog: unreadable request refused", zap.Int("status", e.Code), zap.String("reason", e.Message),
		zap.Stringer("remote", ctx.RemoteAddr()), zap.Error(err))
}

// Refuse answers a connection the limiter refused, 503 in the ErrorModel
// with Retry-After, and closes it.
func (l *Listener) Refuse(c net.Conn, r httplimit.Refusal) {
	msg := "the catalog is serving as many connections as it may; retry later"
	if r == httplimit.RefusedPerIP {
		msg = "too many connections from your address; retry later"
	}
	var resp fasthttp.Response
	writeModel(&resp, errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable, "%s", msg))
	resp.SetConnectionClose()
	_ = l.refuser.Answer(c, &resp)
	skipped, ok := l.refusalLog.Due()
	if !ok {
		return
	}
	l.Log.Warn("catalog: connection refused", zap.Stringer("reason", r), zap.Stringer("remote", c.RemoteAddr()),
		zap.Int("max_connections", l.Limiter.Max()), zap.Int("max_connections_per_ip", l.Limiter.PerIP()),
		zap.Int64("refused_unlogged", skipped))
}

// ConnState releases the limiter's count of a connection when it closes;
// chain it into the server's ConnState.
func (l *Listener) ConnState(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		l.Limiter.Release(c)
	}
}

// Printf is fasthttp's Logger: its messages (connection errors, already
// answered by ErrorHandler) go to the log at debug level.
func (l *Listener) Printf(format string, args ...any) {
	if ce := l.Log.Check(zap.DebugLevel, "catalog: fasthttp"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, args...)))
	}
}

// writeModel sets resp to e in the ErrorModel.
func writeModel(resp *fasthttp.Response, e *Error) {
	body, _ := json.Marshal(errorResponse{Error: errorModel{Message: e.Message, Type: e.Type, Code: e.Code}})
	resp.SetStatusCode(e.Code)
	resp.Header.SetContentType(contentTypeJSON)
	if e.Code == fasthttp.StatusServiceUnavailable {
		resp.Header.Set("Retry-After", strconv.Itoa(1))
	}
	resp.SetBody(body)
}
