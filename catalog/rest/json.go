package rest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/valyala/fasthttp"
)

// readJSON decodes the request body into v: one JSON value, nothing after
// it. A malformed body is a 400 that says what is wrong.
func (s *Server) readJSON(ctx *fasthttp.RequestCtx, v any) error {
	body := ctx.PostBody()
	if len(body) > s.cfg.MaxBodyBytes {
		return errorf(fasthttp.StatusRequestEntityTooLarge, typeRequestEntityTooLong, "request body is %d bytes, at most %d are accepted", len(body), s.cfg.MaxBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("missing JSON request body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return badRequest("malformed JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return badRequest("malformed request: field %q: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("malformed JSON: unexpected end of body")
		}
		return badRequest("malformed JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("malformed JSON: data after the request object")
	}
	return nil
}

// writeJSON answers 200 with v.
func writeJSON(ctx *fasthttp.RequestCtx, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	ctx.SetContentType(contentTypeJSON)
	ctx.SetBody(body)
	return nil
}

// Pagination: with a pageToken parameter (even empty) the answer is one page
// of at most pageSize items (defaultPageSize without it) and a token for the
// next page; without one, everything, as the spec requires of servers that
// paginate. A token is the base64url of the last name returned: listings
// are sorted by name, so the next page starts after it.
const (
	defaultPageSize = 1000
	maxPageSize     = 10000
)

// paginate returns the page of the sorted names that args ask for, and the
// next page's token (nil on the last page).
func paginate(names []string, args *fasthttp.Args) ([]string, *string, error) {
	if !args.Has("pageToken") {
		return names, nil, nil
	}
	size := defaultPageSize
	if v := args.Peek("pageSize"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return nil, nil, badRequest("pageSize must be a positive integer, not %q", v)
		}
		size = min(n, maxPageSize)
	}
	start := 0
	if tok := args.Peek("pageToken"); len(tok) > 0 {
		after, err := base64.RawURLEncoding.DecodeString(string(tok))
		if err != nil {
			return nil, nil, badRequest("malformed pageToken")
		}
		start = sort.SearchStrings(names, string(after))
		if start < len(names) && names[start] == string(after) {
			start++
		}
	}
	end := min(start+size, len(names))
	page := names[start:end]
	if end == len(names) {
		return page, nil, nil
	}
	next := base64.RawURLEncoding.EncodeToString([]byte(names[end-1]))
	return page, &next, nil
}
