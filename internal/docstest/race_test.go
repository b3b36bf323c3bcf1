//go:build race

package docstest

// raceEnabled reports whether the tests run with the race detector.
const raceEnabled = true
