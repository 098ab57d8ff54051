package rest

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/duckicelake/duckicelake/catalog/ducklake"
	"github.com/duckicelake/duckicelake/governance"
)

type namespaceBody struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

type listNamespacesBody struct {
	NextPageToken *string    `json:"next-page-token"`
	Namespaces    [][]string `json:"namespaces"`
}

type updatePropertiesRequest struct {
	Removals []string          `json:"removals"`
	Updates  map[string]string `json:"updates"`
}

type updatePropertiesBody struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing"`
}

// schemaAt is a schema: its id, name and resolved path (ducklake.Schema).
type schemaAt = ducklake.Schema

// schemas lists the schemas visible at snap.
func (s *Server) schemas(ctx context.Context, snap int64) ([]schemaAt, error) {
	return s.svc.Namespaces(ctx, snap)
}

// schemaNow is the current snapshot and the namespace name as of it
// (NoSuchNamespace when it does not exist).
func (s *Server) schemaNow(ctx context.Context, name string) (int64, schemaAt, error) {
	snap, err := s.currentSnapshot(ctx)
	if err != nil {
		return 0, schemaAt{}, err
	}
	sc, err := s.schemaNamed(ctx, snap, name)
	return snap, sc, err
}

// schemaNamed finds schema name at snap, or answers NoSuchNamespace.
func (s *Server) schemaNamed(ctx context.Context, snap int64, name string) (schemaAt, error) {
	return s.svc.NamespaceAt(ctx, snap, name)
}

func (s *Server) listNamespaces(r *request) error {
	args := r.rc.QueryArgs()
	snap, err := s.currentSnapshot(r.ctx)
	if err != nil {
		return err
	}
	if parent := args.Peek("parent"); len(parent) > 0 {
		// One level: a namespace has no children, but an unknown parent is
		// still a 404.
		ns, err := unescapeQuery(parent)
		if err != nil {
			return err
		}
		if levels, ok := multiLevelNamespace([]string{ns}); ok {
			return noSuchNamespace(strings.Join(levels, "."))
		}
		if err := checkNamespace([]string{ns}); err != nil {
			return err
		}
		if err := s.authorizeScope(r, governance.ActionListNamespaces, ns); err != nil {
			return err
		}
		if _, err := s.schemaNamed(r.ctx, snap, ns); err != nil {
			return err
		}
		return writeJSON(r.rc, listNamespacesBody{Namespaces: [][]string{}})
	}
	scs, err := s.schemas(r.ctx, snap)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(scs))
	for _, sc := range scs {
		// Only what the caller may read: a namespace's existence is not a
		// secret worth a 403, but its name may be.
		if s.allowsScope(r, governance.ActionLoadNamespace, sc.Name) {
			names = append(names, sc.Name)
		}
	}
	slices.Sort(names)
	page, next, err := paginate(names, args)
	if err != nil {
		return err
	}
	out := listNamespacesBody{NextPageToken: next, Namespaces: make([][]string, len(page))}
	for i, n := range page {
		out.Namespaces[i] = []string{n}
	}
	return writeJSON(r.rc, out)
}

// unescapeQuery is for query values, which fasthttp has already decoded.
func unescapeQuery(b []byte) (string, error) {
	if !utf8.Valid(b) {
		return "", badRequest("namespace is not valid UTF-8")
	}
	return string(b), nil
}

func (s *Server) loadNamespace(r *request) error {
	_, sc, err := s.schemaNow(r.ctx, r.ns)
	if err != nil {
		return err
	}
	props, err := s.svc.Properties(r.ctx, sc)
	if err != nil {
		return err
	}
	return writeJSON(r.rc, namespaceBody{Namespace: []string{sc.Name}, Properties: props})
}

func (s *Server) namespaceExists(r *request) error {
	if _, _, err := s.schemaNow(r.ctx, r.ns); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (s *Server) createNamespace(r *request) error {
	var req namespaceBody
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	if req.Namespace == nil {
		return badRequest("missing namespace")
	}
	if err := checkNamespace(req.Namespace); err != nil {
		return err
	}
	ns, err := s.svc.CreateNamespace(r.ctx, r.p.Subject, req.Namespace[0], req.Properties)
	if err != nil {
		return err
	}
	return writeJSON(r.rc, namespaceBody{Namespace: []string{ns.Name}, Properties: ns.Properties})
}

func (s *Server) dropNamespace(r *request) error {
	if err := s.svc.DropNamespace(r.ctx, r.p.Subject, r.ns); err != nil {
		return err
	}
	r.rc.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// updateProperties changes the sidecar only: properties are not DuckLake
// state, so no snapshot is made.
func (s *Server) updateProperties(r *request) error {
	var req updatePropertiesRequest
	if err := s.readJSON(r.rc, &req); err != nil {
		return err
	}
	ch, err := s.svc.UpdateProperties(r.ctx, r.ns, req.Removals, req.Updates)
	if err != nil {
		return err
	}
	return writeJSON(r.rc, updatePropertiesBody{Updated: ch.Updated, Removed: ch.Removed, Missing: ch.Missing})
}
