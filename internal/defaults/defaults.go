// Package defaults fills in unset configuration: a limit, size or
// duration left zero (or set negative, which means nothing sensible)
// takes the package's default. One helper instead of an if-block per
// field in every Config's applyDefaults.
//
// defaults imports nothing; the packages with a Config import it.
package defaults

// Positive is v, or def when v is not positive.
func Positive[T ~int | ~int32 | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
