//go:build race

package engine

// raceEnabled reports whether the tests were built with -race, whose shadow
// memory multiplies a process's RSS.
const raceEnabled = true
