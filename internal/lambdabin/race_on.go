//go:build race

package lambdabin

// raceEnabled reports that this binary was built with -race.
const raceEnabled = true
