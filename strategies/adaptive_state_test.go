package strategies

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFingerprint(t *testing.T) {
	tests := []struct{ key, want string }{
		{"", "e3b0c44298fc"},     // sha256("") = e3b0c442 98fc1c14 …
		{"test", "9f86d081884c"}, // sha256("test") = 9f86d081 884c7d65 …
	}
	for _, tt := range tests {
		if got := Fingerprint(tt.key); got != tt.want {
			t.Errorf("Fingerprint(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	const apiKey = "sk-ant-secret-value"
	path := filepath.Join(t.TempDir(), "state.json")
	key := StateKey{Provider: "anthropic", BaseURL: "http://127.0.0.1:8080", KeyFingerprint: Fingerprint(apiKey)}
	other := StateKey{Provider: "openai", BaseURL: "https://api.openai.com/v1", KeyFingerprint: Fingerprint("sk-other")}

	// A first run learns a limit of 20 for key and 7 for other.
	first := NewAdaptive(AdaptiveConfig{})
	first.SetState(key.Provider, key.KeyFingerprint, LearnedState{Limit: 20, RTTSeconds: 0.75})
	first.SetState(other.Provider, other.KeyFingerprint, LearnedState{Limit: 7})
	if err := first.SaveState(path, other); err != nil {
		t.Fatal(err)
	}
	if err := first.SaveState(path, key); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), apiKey) {
		t.Errorf("state file contains the API key:\n%s", data)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("state file is not JSON: %v\n%s", err, data)
	}
	if f.Version != 1 || len(f.Limits) != 2 || f.Limits[0].StateKey != key || f.Limits[1].StateKey != other {
		t.Errorf("state file = %+v, want version 1 with %v then %v", f, key, other)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}

	// A second run starts at the learned limit, past slow start.
	second := NewAdaptive(AdaptiveConfig{})
	found, err := second.LoadState(path, key)
	if err != nil || !found {
		t.Fatalf("LoadState = %v, %v; want true, nil", found, err)
	}
	got := second.State(key.Provider, key.KeyFingerprint)
	if got.Limit != 20 || got.Window != 20 || got.RTTSeconds != 0.75 {
		t.Errorf("after LoadState: %+v, want limit 20, window 20, rtt 0.75 s", got)
	}
	if st := second.Stats(); st.Limit != 20 {
		t.Errorf("after LoadState: Stats.Limit = %v, want 20", st.Limit)
	}

	// Saving again replaces the entry.
	second.SetState(key.Provider, key.KeyFingerprint, LearnedState{Limit: 12})
	if err := second.SaveState(path, key); err != nil {
		t.Fatal(err)
	}
	third := NewAdaptive(AdaptiveConfig{})
	if _, err := third.LoadState(path, key); err != nil {
		t.Fatal(err)
	}
	if got := third.State(key.Provider, key.KeyFingerprint).Limit; got != 12 {
		t.Errorf("after saving again: limit %d, want 12", got)
	}
}

func TestLoadStateMissing(t *testing.T) {
	dir := t.TempDir()
	key := StateKey{Provider: "anthropic", BaseURL: "x", KeyFingerprint: Fingerprint("k")}
	a := NewAdaptive(AdaptiveConfig{})
	if found, err := a.LoadState(filepath.Join(dir, "none.json"), key); found || err != nil {
		t.Errorf("LoadState(missing file) = %v, %v; want false, nil", found, err)
	}
	path := filepath.Join(dir, "state.json")
	if err := a.SaveState(path, StateKey{Provider: "openai"}); err != nil {
		t.Fatal(err)
	}
	if found, err := a.LoadState(path, key); found || err != nil {
		t.Errorf("LoadState(no entry) = %v, %v; want false, nil", found, err)
	}
	if got := a.State(key.Provider, key.KeyFingerprint); got.Limit != 0 || got.Window != 4 {
		t.Errorf("after LoadState with no entry: %+v, want the initial state", got)
	}
}

func TestLoadStateInvalid(t *testing.T) {
	tests := []struct{ name, body, wantErr string }{
		{"not JSON", "{", "strategies: state file"},
		{"wrong version", `{"version": 2, "limits": []}`, "version 2, want 1"},
		{"negative limit", `{"version": 1, "limits": [{"provider": "a", "limit": -1}]}`, "limits[0]: negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			a := NewAdaptive(AdaptiveConfig{})
			if _, err := a.LoadState(path, StateKey{Provider: "a"}); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("LoadState = %v, want an error containing %q", err, tt.wantErr)
			}
			if err := a.SaveState(path, StateKey{Provider: "a"}); err == nil {
				t.Errorf("SaveState over an invalid file = nil, want an error")
			}
		})
	}
}

// TestRestoredStateProbes checks that a run started from a saved limit holds
// there and probes above it after ProbeAfter round trips.
func TestRestoredStateProbes(t *testing.T) {
	law := newAdaptiveLaw(AdaptiveConfig{})
	l := &law
	l.restore(stepT0, LearnedState{Limit: 10, RTTSeconds: 0.5})
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{0, 10}, {1499 * time.Millisecond, 10}, {1500 * time.Millisecond, 11}} {
		if got := l.capacity(stepT0.Add(tt.at)); got != tt.want {
			t.Errorf("capacity(t0+%v) = %d, want %d", tt.at, got, tt.want)
		}
	}
}

// TestStateLegacyFingerprint reads a state file an older release wrote,
// when provider.Client's Cost.Key was "key-" + 12 hex digits (and "" with no
// key): its entries still apply to today's fingerprints, and saving rewrites
// them in today's format without leaving the old entry beside the new.
func TestStateLegacyFingerprint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	legacy := `{"version": 1, "limits": [
  {"provider": "anthropic", "base_url": "embedded-mock", "key_fingerprint": "", "limit": 5, "window": 5, "rtt_seconds": 0.5, "saved": "2026-11-30T09:00:00Z"},
  {"provider": "anthropic", "base_url": "embedded-mock", "key_fingerprint": "key-9f86d081884c", "limit": 20, "window": 18, "rtt_seconds": 0.75, "saved": "2026-11-30T09:00:00Z"}
]}
`
	if err := os.WriteFile(path, []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		apiKey string
		limit  int
	}{{"test", 20}, {"", 5}} {
		key := StateKey{Provider: "anthropic", BaseURL: "embedded-mock", KeyFingerprint: Fingerprint(tt.apiKey)}
		a := NewAdaptive(AdaptiveConfig{})
		found, err := a.LoadState(path, key)
		if err != nil || !found {
			t.Fatalf("LoadState(%v) = %v, %v; want the legacy entry found", key, found, err)
		}
		if got := a.State(key.Provider, key.KeyFingerprint).Limit; got != tt.limit {
			t.Errorf("key %q: limit %d after LoadState, want %d", tt.apiKey, got, tt.limit)
		}
	}

	key := StateKey{Provider: "anthropic", BaseURL: "embedded-mock", KeyFingerprint: Fingerprint("test")}
	a := NewAdaptive(AdaptiveConfig{})
	a.SetState(key.Provider, key.KeyFingerprint, LearnedState{Limit: 21})
	if err := a.SaveState(path, key); err != nil {
		t.Fatal(err)
	}
	f, err := readStateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var fps []string
	for _, e := range f.Limits {
		fps = append(fps, e.KeyFingerprint)
		if strings.HasPrefix(e.KeyFingerprint, "key-") {
			t.Errorf("entry %+v: legacy fingerprint kept after SaveState", e)
		}
		if e.KeyFingerprint == key.KeyFingerprint && e.Limit != 21 {
			t.Errorf("entry %+v: limit %d, want the saved 21", e, e.Limit)
		}
	}
	if len(f.Limits) != 2 {
		t.Errorf("fingerprints after SaveState = %q, want the legacy \"\" entry and %q once", fps, key.KeyFingerprint)
	}
}
