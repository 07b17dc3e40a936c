package main

import (
	"time"

	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/loadgen"
	"github.com/ratelab/ratelab/mock"
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

// useProfile applies run --profile: the scenario runs against the embedded
// mock configured by the file at path (strictly decoded), whatever its
// server: or target: said.
func useProfile(s *loadgen.Scenario, path string) error {
	if path == "" {
		return nil
	}
	cfg, err := mock.LoadConfig(path)
	if err != nil {
		return usageError("run: --profile: %v", err)
	}
	s.Server, s.Target = cfg, nil
	return nil
}

// openBatchRecord opens batch --record's file.
func openBatchRecord(opt *loadgen.BatchOptions, path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	w, err := record.Create(path, record.Header{Source: "loadgen batch", Started: time.Now()})
	if err != nil {
		return nil, usageError("batch: --record: %v", err)
	}
	opt.Record = w
	return w.Close, nil
}
