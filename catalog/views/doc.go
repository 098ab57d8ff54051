// Package views models Iceberg view metadata (specs/iceberg/view-spec.md,
// format version 1) and applies the REST catalog's view updates to it the
// way Iceberg's reference implementation (ViewMetadata.Builder) does: schemas
// and versions equal to known ones are reused rather than added again, "-1"
// means "the one added last", setting the current version logs it, and the
// version history is trimmed to version.history.num-entries.
//
// A view schema is kept as the JSON object the client sent, so nothing it
// carries is lost; the package owns only its schema-id. Errors a client
// caused wrap ErrInvalid.
package views
