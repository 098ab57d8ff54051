package rest

import "testing"

// TestViewRoutes: the view routes dispatch by method and shape before any
// database work (the handlers' own checks are covered by test/catalog).
func TestViewRoutes(t *testing.T) {
	s := routerServer(t)
	s.cfg.Dev = true // no token: the dev principal
	for _, tt := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{"PUT", "/v1/lake/namespaces/s/views", 405, "GET, POST"},
		{"PATCH", "/v1/lake/namespaces/s/views/v", 405, "GET, HEAD, POST, DELETE"},
		{"GET", "/v1/lake/views/rename", 405, "POST"},
		{"POST", "/v1/lake/views/other", 404, ""},
		{"GET", "/v1/lake/namespaces/s/views/v/x", 404, ""},
		{"GET", "/v1/lake/namespaces/s/views/%zz", 400, ""},
	} {
		ctx := serveRoute(s, tt.method, tt.path, "")
		if ctx.Response.StatusCode() != tt.code {
			t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, ctx.Response.StatusCode(), ctx.Response.Body(), tt.code)
			continue
		}
		if allow := string(ctx.Response.Header.Peek("Allow")); allow != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, allow, tt.allow)
		}
	}
}
