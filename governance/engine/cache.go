package engine

import "github.com/duckicelake/duckicelake/internal/bounded"

// cache is the engine's bounded cache map (entries are cheap to
// recompute; see bounded.Map).
type cache[K comparable, V any] = bounded.Map[K, V]
