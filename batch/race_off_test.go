//go:build !race

package batch

// raceEnabled reports whether the tests were built with -race, whose shadow
// memory multiplies a process's RSS.
const raceEnabled = false
