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

// writeError answers err as an IcebergErrorResponse.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = s.classify(ctx, err)
	}
	body, _ := json.Marshal(errorResponse{Error: errorModel{Message: e.Message, Type: e.Type, Code: e.Code}})
	ctx.Response.Reset()
	ctx.SetStatusCode(e.Code)
	ctx.SetContentType(contentTypeJSON)
	if e.Code == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="duckicelake"`)
	}
	if e.Code == fasthttp.StatusServiceUnavailable {
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetBody(body)
}

// classify turns an unexpected error into a 503 when the metastore is
// unreachable or the request ran out of time, and a 500 otherwise, logging
// the details the client does not get.
func (s *Server) classify(ctx *fasthttp.RequestCtx, err error) *Error {
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
		s.log.Warn("catalog: metastore unavailable", zap.ByteString("method", ctx.Method()),
			zap.ByteString("path", ctx.Path()), zap.Error(err))
		return errorf(fasthttp.StatusServiceUnavailable, TypeServiceUnavailable, "the catalog's metastore is unavailable; retry later")
	}
	s.log.Error("catalog: request failed", zap.ByteString("method", ctx.Method()),
		zap.ByteString("path", ctx.Path()), zap.Error(err))
	return errorf(fasthttp.StatusInternalServerError, TypeInternalServerError, "internal error (see the catalog log at %s)", s.now().UTC().Format("2006-01-02T15:04:05.000Z"))
}
