package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ratelab/ratelab/internal/batchrun"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/record"
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
// server: or target: said. Path "auto" is the profile loadgen calibrate
// --save kept for the scenario's provider and key (findProfile), named on
// stderr; none is an error saying how to save one.
func useProfile(s *loadgen.Scenario, path string, stderr io.Writer) error {
	if path == "" {
		return nil
	}
	if path == "auto" {
		provider, label, err := scenarioKey(s, os.Getenv)
		if err != nil {
			return usageError("run: --profile auto: %v", err)
		}
		if path, err = findProfile(provider, label); err != nil {
			return usageError("run: --profile auto: %v", err)
		}
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return usageError("run: --profile auto: no profile saved for %s key %s (looked for %s): save one with loadgen calibrate RECORDING --save, from a recording of that key (loadgen run --record, mockllm --upstream --record)", provider, keyName(label), path)
		}
		if err != nil {
			return usageError("run: --profile auto: %v", err)
		}
		fmt.Fprintf(stderr, "profile: the one saved for %s key %s at %s (%s), %s\n", provider, keyName(label), st.ModTime().UTC().Format(time.RFC3339), age(time.Since(st.ModTime())), path)
	}
	cfg, err := mock.LoadConfig(path)
	if err != nil {
		return usageError("run: --profile: %v", err)
	}
	s.Server, s.Target = cfg, nil
	return nil
}

// age says how long ago, roughly.
func age(d time.Duration) string {
	switch {
	case d < 2*time.Minute:
		return "just now"
	case d < 2*time.Hour:
		return fmt.Sprintf("%d minutes ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d hours ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// noKey is the label of no key (record.KeyLabel("")). Recordings written
// before it was one labelled no key "", and calibrate --save kept its
// profiles as PROVIDER-nokey.yaml: both are read as noKey's.
var noKey = record.KeyLabel("")

// keyName is how messages name a key label: "(none)" for no key.
func keyName(label string) string {
	if label == "" || label == noKey {
		return "(none)"
	}
	return label
}

// savedProfile is where loadgen calibrate --save keeps the profile of a
// provider and key label (record.KeyLabel: the key's fingerprint, never the
// key; "" is read as no key's): PROVIDER-LABEL.yaml under the user's cache
// directory's ratelab/profiles ($XDG_CACHE_HOME, else ~/.cache, on Linux),
// beside adaptive's state file.
func savedProfile(provider, label string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory to keep profiles in: %v", err)
	}
	if label == "" {
		label = noKey
	}
	return filepath.Join(dir, "ratelab", "profiles", provider+"-"+label+".yaml"), nil
}

// findProfile is the saved profile run --profile auto reads: savedProfile's,
// or for no key, when there is none yet, the PROVIDER-nokey.yaml an earlier
// calibrate --save kept.
func findProfile(provider, label string) (string, error) {
	path, err := savedProfile(provider, label)
	if err != nil || (label != "" && label != noKey) {
		return path, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		old := filepath.Join(filepath.Dir(path), provider+"-nokey.yaml")
		if _, err := os.Stat(old); err == nil {
			return old, nil
		}
	}
	return path, nil
}

// scenarioKey is the provider and key label a scenario's calls are made
// with: its target's provider and the key its api_key_env holds, else the
// request's provider and the key sent to the embedded mock. Item groups of
// different providers are an error: a profile is one provider's.
func scenarioKey(s *loadgen.Scenario, getenv func(string) string) (provider, label string, err error) {
	provider = s.Request.Provider
	for _, g := range s.Items.Groups {
		if g.Provider != "" && g.Provider != provider {
			return "", "", fmt.Errorf("%s: the items call %s and %s: a profile is one provider's; give --profile FILE", s.File, provider, g.Provider)
		}
	}
	key := s.Request.APIKey
	if t := s.Target; t != nil {
		if t.Provider != "" {
			provider = t.Provider
		}
		key = ""
		if t.APIKeyEnv != "" {
			if key = getenv(t.APIKeyEnv); key == "" {
				return "", "", fmt.Errorf("%s: target.api_key_env: environment variable %s is empty or unset: the key names the saved profile", s.File, t.APIKeyEnv)
			}
		}
	}
	return provider, record.KeyLabel(key), nil
}

// openBatchRecord opens batch --record's file.
func openBatchRecord(opt *batchrun.Options, path string) (func() error, error) {
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
