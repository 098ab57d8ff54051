// Package governance holds tags, masking and row-access policies, roles,
// grants and the audit trail, and decides whether a principal may perform an
// action on an object.
package governance
