package loadgen

import (
	"fmt"

	"github.com/ratelab/ratelab/strategies"
)

// adaptiveConfig returns an adaptive row's strategy configuration, sharing
// its learned limit through fleet if that is not nil.
func adaptiveConfig(st *Row, fleet strategies.Fleet) strategies.AdaptiveConfig {
	cfg := st.Config.(*adaptiveSettings).AdaptiveConfig
	if fleet != nil {
		cfg.Fleet = fleet
	}
	return cfg
}

// stateKeys are the state-file keys of a run's clients: one per provider and
// key. The embedded mock's base URL changes from run to run (a fresh port),
// so its entries are keyed by the stable name "embedded-mock".
func (r *router) stateKeys(embedded bool) []strategies.StateKey {
	var keys []strategies.StateKey
	seen := make(map[*providerClient]bool)
	for _, c := range r.byModel {
		if seen[c] {
			continue
		}
		seen[c] = true
		base := c.BaseURL
		if embedded {
			base = "embedded-mock"
		}
		keys = append(keys, strategies.StateKey{Provider: c.Provider.Name(), BaseURL: base, KeyFingerprint: c.Cost(emptyRequest).Key})
	}
	return keys
}

// loadState starts an adaptive strategy from its state file, if it has one.
func loadState(s strategies.Strategy, st *Row, keys []strategies.StateKey) error {
	a, ok := s.(*strategies.Adaptive)
	if !ok || st.StateFile() == "" {
		return nil
	}
	for _, k := range keys {
		if _, err := a.LoadState(st.StateFile(), k); err != nil {
			return fmt.Errorf("state_file: %w", err)
		}
	}
	return nil
}

// saveState saves what an adaptive strategy learned to its state file.
func saveState(s strategies.Strategy, st *Row, keys []strategies.StateKey) error {
	a, ok := s.(*strategies.Adaptive)
	if !ok || st.StateFile() == "" {
		return nil
	}
	for _, k := range keys {
		if err := a.SaveState(st.StateFile(), k); err != nil {
			return fmt.Errorf("state_file: %w", err)
		}
	}
	return nil
}
