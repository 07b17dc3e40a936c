package main

import (
	"os"
	"runtime/debug"
)

// virtualGCPercent is the garbage collector's target during a simulated
// run (loadgen run --virtual, tune --virtual) when GOGC is not set.
const virtualGCPercent = 400

// simulatedGC raises the garbage collector's target for a simulated run,
// unless the user set GOGC, and returns what restores it. Such a run is
// pure CPU with a live heap of a few MB, which the default target collects
// so often that collection took a tenth of its time; at 400 it takes 2 %,
// for a peak RSS some tens of MB higher (docs/time-and-tests.md: Simulated time).
func simulatedGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(virtualGCPercent)
	return func() { debug.SetGCPercent(old) }
}
