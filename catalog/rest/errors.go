package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/catalog/commit"
	"github.com/duckicelake/duckicelake/catalog/service"
)

// Error types of the Iceberg REST ErrorModel, as Iceberg clients map them
// to exceptions.
const (
	TypeBadRequest           = "BadRequestException"
	TypeNotAuthorized        = "NotAuthorizedException"
	TypeForbidden            = "ForbiddenException"
	TypeNotFound             = "NotFoundException"
	TypeNoSuchWarehouse      = "NoSuchWarehouseException"
	TypeNoSuchNamespace      = "NoSuchNamespaceException"
	TypeNoSuchTable          = "NoSuchTableException"
	TypeAlreadyExists        = "AlreadyExistsException"
	TypeNamespaceNotEmpty    = "NamespaceNotEmptyException"
	TypeCommitFailed         = "CommitFailedException"
	TypeUnprocessableEntity  = "UnprocessableEntityException"
	TypeUnsupported          = "UnsupportedOperationException"
	TypeMethodNotAllowed     = "MethodNotAllowedException"
	TypeServiceUnavailable   = "ServiceUnavailableException"
	TypeInternalServerError  = "InternalServerError"
	typeRequestEntityTooLong = "RequestEntityTooLargeException"
)

// Error is an error the catalog answers with its own status and ErrorModel
// type. Handlers return it; anything else becomes a 500 (or a 503 when
// Postgres is unreachable) whose details go to the log, not the client.
type Error struct {
	Code    int    // HTTP status
	Type    string // ErrorModel type, e.g. TypeNoSuchTable
	Message string
	// cause is the unexpected error behind a 5xx, for the log only.
	cause error
	// allow is a 405's Allow header.
	allow string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Type, e.Message) }

func errorf(code int, typ, format string, args ...any) *Error {
	return &Error{Code: code, Type: typ, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return errorf(fasthttp.StatusBadRequest, TypeBadRequest, format, args...)
}

func noSuchNamespace(ns string) *Error {
	return errorf(fasthttp.StatusNotFound, TypeNoSuchNamespace, "Namespace does not exist: %s", ns)
}

func noSuchTable(ns, table string) *Error {
	return errorf(fasthttp.StatusNotFound, TypeNoSuchTable, "Table does not exist: %s.%s", ns, table)
}

func forbidden(format string, args ...any) *Error {
	return errorf(fasthttp.StatusForbidden, TypeForbidden, format, args...)
}

func notAuthorized(format string, args ...any) *Error {
	return errorf(fasthttp.StatusUnauthorized, TypeNotAuthorized, format, args...)
}

func unsupported(format string, args ...any) *Error {
	return errorf(fasthttp.StatusNotAcceptable, TypeUnsupported, format, args...)
}

type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

type errorResponse struct {
	Error errorModel `json:"error"`
}

// writeError answers err as an IcebergErrorResponse (a request outside the
// route table: config, tokens).
func (s *Server) writeError(ctx *fasthttp.RequestCtx, err error) { s.writeErrorFor(ctx, nil, err) }

// writeErrorFor answers err for r (nil before routing) as an
// IcebergErrorResponse and logs it once: the route, the principal, the
// status, the type and the message; 4xx at info, 5xx at error (with the
// cause the client does not see).
func (s *Server) writeErrorFor(ctx *fasthttp.RequestCtx, r *request, err error) {
	var (
		e  *Error
		se *service.Error
	)
	switch {
	case errors.As(err, &e):
	case errors.As(err, &se):
		e = fromService(se)
	default:
		e = s.classify(err)
	}
	route, principal := "", ""
	if r != nil {
		r.err = e
	}
	if r != nil && r.route != nil {
		route = r.route.pattern
	}
	if r != nil && r.p != nil {
		principal = r.p.Subject
	}
	fields := []zap.Field{zap.ByteString("method", ctx.Method()), zap.ByteString("path", ctx.Path()),
		zap.String("route", route), zap.String("principal", principal),
		zap.Int("status", e.Code), zap.String("type", e.Type), zap.String("message", e.Message)}
	if e.Code >= 500 {
		if e.cause != nil {
			fields = append(fields, zap.Error(e.cause))
		}
		s.log.Error("catalog: request refused", fields...)
	} else {
		s.log.Info("catalog: request refused", fields...)
	}
	body, _ := json.Marshal(errorResponse{Error: errorModel{Message: e.Message, Type: e.Type, Code: e.Code}})
	ctx.Response.Reset()
	ctx.SetStatusCode(e.Code)
	ctx.SetContentType(contentTypeJSON)
	if e.Code == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="duckicelake"`)
	}
	if e.allow != "" {
		ctx.Response.Header.Set("Allow", e.allow)
	}
	if e.Code == fasthttp.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetBody(body)
}

// serviceErrors is the status and ErrorModel type of each kind of
// refusal (refusal.Error) catalog/service and catalog/commit declare.
var serviceErrors = []struct {
	kind error
	code int
	typ  string
}{
	{service.ErrNoSuchNamespace, fasthttp.StatusNotFound, TypeNoSuchNamespace},
	{service.ErrNoSuchTable, fasthttp.StatusNotFound, TypeNoSuchTable},
	{service.ErrNoSuchView, fasthttp.StatusNotFound, TypeNoSuchView},
	{service.ErrAlreadyExists, fasthttp.StatusConflict, TypeAlreadyExists},
	{service.ErrNotEmpty, fasthttp.StatusConflict, TypeNamespaceNotEmpty},
	{service.ErrForbidden, fasthttp.StatusForbidden, TypeForbidden},
	{service.ErrConflict, fasthttp.StatusConflict, TypeCommitFailed},
	{service.ErrInvalid, fasthttp.StatusBadRequest, TypeBadRequest},
	{service.ErrInvalidView, fasthttp.StatusBadRequest, typeIllegalArgument},
	{service.ErrUnprocessable, fasthttp.StatusUnprocessableEntity, TypeUnprocessableEntity},
	{service.ErrUnsupported, fasthttp.StatusNotAcceptable, TypeUnsupported},
	// commit's other kinds are the shared ones above (catalog/refusal).
	{commit.ErrNotFound, fasthttp.StatusNotFound, TypeNoSuchTable},
}

// fromService is the answer to a refusal; a kind this
// table lacks is a 500, loud in the log, rather than a guess.
func fromService(se *service.Error) *Error {
	for _, k := range serviceErrors {
		if se.Kind == k.kind {
			return &Error{Code: k.code, Type: k.typ, Message: se.Message}
		}
	}
	return &Error{Code: fasthttp.StatusInternalServerError, Type: TypeInternalServerError,
		Message: "internal error (an unclassified catalog refusal)", cause: se}
}

// classify turns an unexpected error into a 503 when the metastore is
// unreachable or the request ran out of time (or its client went away),
// and a 500 otherwise; the details stay in the cause, for the log.
func (s *Server) classify(err error) *Error {
	var (
		connErr *pgconn.ConnectError
		netErr  net.Error
	)
	unavailable := errors.As(err, &connErr) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "57P01" || pgErr.Code == "53300" || pgErr.Code == "57P03") {
		unavailable = true // admin shutdown, too many connections, cannot connect now
	}
	if unavailable {
		e := errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable, "the catalog's metastore is unavailable; retry later")
		e.cause = err
		return e
	}
	e := errorf(fasthttp.StatusInternalServerError, TypeInternalServerError, "internal error (see the catalog log at %s)", s.now().UTC().Format("2006-01-02T15:04:05.000Z"))
	e.cause = err
	return e
}
