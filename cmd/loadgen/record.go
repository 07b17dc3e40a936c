package main

import (
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/loadgen"
)

// openRecord opens the --record file of a run (path "" records nothing)
// and returns the function that closes it.
func openRecord(opts *loadgen.Options, path, source string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	started := time.Now()
	if opts.Virtual {
		started = loadgen.SimEpoch
	}
	w, err := record.Create(path, record.Header{Source: source, Started: started, Simulated: opts.Virtual})
	if err != nil {
		return nil, usageError("%s: --record: %v", source, err)
	}
	opts.Record = w
	return w.Close, nil
}
