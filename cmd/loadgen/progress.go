package main

import (
	"io"
	"os"

	"github.com/ratelab/ratelab/internal/loadgen"
)

// progressTo reports a run's or a batch's progress on stderr: a live line
// redrawn in place when it is a terminal, else a plain line every
// loadgen.DefaultProgressEvery, so that a CI log shows the run is alive.
func progressTo(stderr io.Writer) *loadgen.Progress {
	return &loadgen.Progress{W: stderr, Live: isTerminal(stderr)}
}

// isTerminal reports whether w is a character device (a terminal), without
// depending on golang.org/x/term.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
