// Package plan derives, for one principal and one table at its current
// schema, what governance enforces: whether the table is visible, at most
// one mask per column, the AND of the row filters the principal does not
// bypass (in policy-name order, evaluated on raw values before any mask),
// the enforcement tier, a signature of the plan's shape, and the masking
// view's SQL with every identifier and literal escaped.
//
// Build is a pure function of a governance State, the principal's
// effective roles and the table; callers cache its result. It never fails
// open by itself: a policy it cannot apply (a mask whose type no longer
// matches its column, a filter over a column that is gone) is returned as
// an Issue, and the caller applies the failure posture.
//
// plan may import governance/model, governance/sqltext and catalog/ducklake
// (types only); it does no I/O.
package plan
