package testsupport

import "testing"

// NoRaceMarker begins the skip message of [SkipUnderRace]. scripts/gotest.sh
// (make test, make unit) finds the tests skipped with it, runs them once
// more without the race detector, and counts them there, not as skipped.
const NoRaceMarker = "[norace]"

// SkipUnderRace skips t, a top-level test, when the race detector is on,
// because what t checks is not what runs under it: allocation counts (the
// detector makes sync.Pool drop items at random and allocates itself).
// scripts/gotest.sh runs t again without -race.
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if RaceEnabled {
		t.Skip(NoRaceMarker + " " + why + ": scripts/gotest.sh runs it without -race")
	}
}
