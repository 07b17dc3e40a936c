package strategies

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ratelab/ratelab/internal/keyid"
)

// Fingerprint returns the fingerprint that stands for an API key in state
// files, Cost.Key (provider.Client.Cost) and reports: the first 12 hex digits
// of the key's SHA-256, for every key including "". It identifies a key
// without revealing it, and it is the one format client and server agree on:
// the mock names keys in metrics, stats and Redis by the same string
// (both are internal/keyid's; loadgen's TestFingerprintAgrees holds them
// equal).
func Fingerprint(key string) string { return keyid.Fingerprint(key) }

// legacyFingerprint reads a key fingerprint as an older release wrote it in
// a state file, in today's format: provider.Client used to write "key-" and
// the 12 hex digits, and "" for a client without a key. Anything else is
// returned as it is.
func legacyFingerprint(fp string) string {
	switch {
	case fp == "":
		return Fingerprint("")
	case len(fp) == len("key-")+12 && fp[:4] == "key-":
		return fp[4:]
	}
	return fp
}

// sameKey reports whether a state file's entry is for key, reading either
// side's fingerprint in the legacy format too.
func sameKey(e, key StateKey) bool {
	return e.Provider == key.Provider && e.BaseURL == key.BaseURL &&
		legacyFingerprint(e.KeyFingerprint) == legacyFingerprint(key.KeyFingerprint)
}

// StateKey identifies one learned limit in a state file: the provider, the
// base URL the calls go to, and the fingerprint of the API key (see
// Fingerprint; never the key itself). Adaptive applies it to the calls whose
// Cost has Provider and Key equal to Provider and KeyFingerprint.
type StateKey struct {
	Provider       string `json:"provider"`
	BaseURL        string `json:"base_url"`
	KeyFingerprint string `json:"key_fingerprint"`
}

// LearnedState is what Adaptive saves of one key: enough to start the next
// run at the limit instead of rediscovering it.
type LearnedState struct {
	StateKey
	// Limit is the learned limit: the most calls the server held at once when
	// it refused one. 0 if the run never met the limit.
	Limit int `json:"limit"`
	// Window is the window when the state was saved.
	Window float64 `json:"window"`
	// RTTSeconds is the smoothed round trip; 0 if unknown.
	RTTSeconds float64 `json:"rtt_seconds"`
	// Saved is when the state was saved.
	Saved time.Time `json:"saved"`
}

// stateFile is the JSON document of a state file:
//
//	{"version": 1, "limits": [{"provider": "anthropic",
//	  "base_url": "https://api.anthropic.com", "key_fingerprint": "9f86d081884c",
//	  "limit": 20, "window": 18, "rtt_seconds": 0.75,
//	  "saved": "2026-11-30T09:00:00Z"}]}
//
// with one entry per StateKey, sorted by provider, base URL and fingerprint.
type stateFile struct {
	Version int            `json:"version"`
	Limits  []LearnedState `json:"limits"`
}

const stateVersion = 1

// State returns the learned state of the calls whose Cost has the given
// provider and key, as SaveState would save it (with a zero StateKey).
func (a *Adaptive) State(provider, key string) LearnedState {
	a.mu.Lock()
	defer a.mu.Unlock()
	ak := a.keyLocked(limitKey{provider, key})
	return ak.law.state()
}

// SetState starts the calls whose Cost has the given provider and key from a
// learned state: the window at the learned limit, past slow start, with a
// probe above the limit due after ProbeAfter round trips. A state with no
// limit only sets the window and the round trip.
func (a *Adaptive) SetState(provider, key string, s LearnedState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ak := a.keyLocked(limitKey{provider, key})
	ak.law.restore(a.clk.Now(), s)
	a.publishLocked(a.clk.Now())
	ak.line.notifyLocked()
}

// SaveState writes the learned state of key's calls (Cost.Provider =
// key.Provider, Cost.Key = key.KeyFingerprint) to the state file at path,
// replacing the entry for key and keeping the others. An entry an older
// release wrote with the fingerprint "key-" + 12 hex digits (or "" for no
// key) is key's entry too, and is rewritten in Fingerprint's format. The file is written
// whole to a temporary file and renamed into place, with mode 0600.
func (a *Adaptive) SaveState(path string, key StateKey) error {
	s := a.State(key.Provider, key.KeyFingerprint)
	s.StateKey = key
	s.KeyFingerprint = legacyFingerprint(key.KeyFingerprint)
	s.Saved = a.clk.Now().UTC().Truncate(time.Second)

	f, err := readStateFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f.Limits = slices.DeleteFunc(f.Limits, func(e LearnedState) bool { return sameKey(e.StateKey, key) })
	f.Limits = append(f.Limits, s)
	slices.SortFunc(f.Limits, func(x, y LearnedState) int {
		return cmp.Or(cmp.Compare(x.Provider, y.Provider), cmp.Compare(x.BaseURL, y.BaseURL),
			cmp.Compare(x.KeyFingerprint, y.KeyFingerprint))
	})
	f.Version = stateVersion
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("strategies: state file %s: %w", path, err)
	}
	return writeFileAtomic(path, append(data, '\n'))
}

// LoadState reads the state file at path and, if it has an entry for key,
// starts key's calls from it (see SetState). Entries written by older
// releases, with fingerprints "key-" + 12 hex digits, still match. It reports whether it found one;
// a missing file is not an error.
func (a *Adaptive) LoadState(path string, key StateKey) (bool, error) {
	f, err := readStateFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(f.Limits, func(e LearnedState) bool { return sameKey(e.StateKey, key) })
	if i < 0 {
		return false, nil
	}
	a.SetState(key.Provider, key.KeyFingerprint, f.Limits[i])
	return true, nil
}

// readStateFile reads and checks a state file. The error wraps
// fs.ErrNotExist when there is no file.
func readStateFile(path string) (stateFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return stateFile{}, fmt.Errorf("strategies: state file: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		return stateFile{}, fmt.Errorf("strategies: state file %s: %w", path, err)
	}
	if f.Version != stateVersion {
		return stateFile{}, fmt.Errorf("strategies: state file %s: version %d, want %d", path, f.Version, stateVersion)
	}
	for i, e := range f.Limits {
		if e.Limit < 0 || e.Window < 0 || e.RTTSeconds < 0 {
			return stateFile{}, fmt.Errorf("strategies: state file %s: limits[%d]: negative limit, window or rtt_seconds", path, i)
		}
	}
	return f, nil
}

// writeFileAtomic writes data to a temporary file beside path and renames it
// to path, so that a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("strategies: state file: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("strategies: state file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("strategies: state file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("strategies: state file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("strategies: state file: %w", err)
	}
	return nil
}

// state returns the law's learned state, with a zero StateKey and time.
func (l *adaptiveLaw) state() LearnedState {
	return LearnedState{Limit: l.limit, Window: l.window, RTTSeconds: l.srtt.Seconds()}
}

// restore starts the law at now from s.
func (l *adaptiveLaw) restore(now time.Time, s LearnedState) {
	if s.RTTSeconds > 0 {
		l.srtt = time.Duration(s.RTTSeconds * float64(time.Second))
	}
	if s.Limit > 0 {
		l.limit = min(max(s.Limit, l.cfg.Min), l.cfg.Max)
		l.window = float64(l.limit)
		l.slowStart = false
		l.probeAt = now.Add(l.hold())
	} else if s.Window > 0 {
		l.window = min(max(s.Window, float64(l.cfg.Min)), float64(l.cfg.Max))
	}
	l.note(now, "state")
}
