//go:build !race

package testsupport

// RaceEnabled reports whether the race detector is on. It makes sync.Pool
// drop items at random and adds allocations of its own, so allocation
// counts are meaningless under it.
const RaceEnabled = false
