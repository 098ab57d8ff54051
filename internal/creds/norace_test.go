//go:build !race

package creds

const raceEnabled = false
