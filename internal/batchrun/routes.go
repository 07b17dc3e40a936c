package batchrun

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// route is the strategy of the batch, or of one provider its input's lines
// name, with where its adaptive state is kept.
type route struct {
	strategy  strategies.Strategy
	close     func()
	adaptive  *strategies.Adaptive // strategy, when it is adaptive
	stateFile string               // "": no state kept
	stateKey  strategies.StateKey
}

// saveState saves the adaptive state of a route that made attempts.
func (r *route) saveState(attempts int64) error {
	if r.stateFile == "" || attempts == 0 {
		return nil
	}
	if err := r.adaptive.SaveState(r.stateFile, r.stateKey); err != nil {
		return fmt.Errorf("--state-file: %w", err)
	}
	return nil
}

// routes makes batch.Batch's route to each provider the input's lines name
// in their metadata (metadata.provider) other than the batch's own: each
// with its own client, key and strategy instance, so that one provider's
// 429s never slow another's.
type routes struct {
	ctx       context.Context
	opt       Options
	st        *loadgen.Row            // the batch's strategy
	specs     map[string]*loadgen.Row // --provider-strategy's, by provider
	transport *http.Client            // the endpoint's client, before recording
	ep        endpoint
	open      []*route
}

// route is batch.Batch.Routes: provider name's client and strategy.
func (rs *routes) route(name string) (*batch.Route, error) {
	rp, err := provider.ByName(name)
	if err != nil {
		return nil, err
	}
	rc, stateBase, err := rs.client(name, rp)
	if err != nil {
		return nil, err
	}
	st := rs.strategyOf(name)
	strategy, closeStrategy, err := loadgen.OpenStrategy(rs.ctx, st)
	if err != nil {
		return nil, err
	}
	r := &route{strategy: strategy, close: closeStrategy,
		stateKey: strategies.StateKey{Provider: name, BaseURL: stateBase, KeyFingerprint: loadgen.KeyFingerprint(rc)}}
	rs.open = append(rs.open, r)
	if r.adaptive, _ = strategy.(*strategies.Adaptive); r.adaptive != nil {
		if r.stateFile = cmp.Or(st.StateFile(), rs.opt.StateFile); r.stateFile != "" {
			if _, err := r.adaptive.LoadState(r.stateFile, r.stateKey); err != nil {
				return nil, fmt.Errorf("--state-file: %v", strings.TrimPrefix(err.Error(), "strategies: "))
			}
		}
	}
	return &batch.Route{Client: rc, Strategy: strategy, Model: loadgen.ModelOf(name)}, nil
}

// client is provider name's client at the batch's endpoint, with the key
// of its own variable (or the batch's, from --api-key-command or for the
// embedded mock), and the base URL its adaptive state is kept under.
func (rs *routes) client(name string, rp provider.Provider) (*provider.Client, string, error) {
	rc := &provider.Client{Provider: rp, HTTP: loadgen.RecordClient(rs.transport, rs.opt.Record, "batch")}
	if rs.opt.Mock {
		rc.BaseURL, rc.APIKey = loadgen.ProviderBase(name, rs.ep.mock.BaseURL), rs.ep.key
		return rc, "embedded-mock", nil
	}
	rk := rs.ep.key
	if rs.opt.APIKeyCommand == "" {
		rk = strings.TrimSpace(rs.opt.getenv(rp.KeyEnv()))
	}
	if rk == "" && rs.ep.base == "" {
		return nil, "", fmt.Errorf("no API key for %s: set %s, or give --api-key-command, or --base-url for a server that needs no key", name, rp.KeyEnv())
	}
	rc.APIKey = rk
	if rs.ep.base != "" {
		rc.BaseURL = loadgen.ProviderBase(name, rs.ep.base)
	}
	return rc, cmp.Or(rc.BaseURL, rp.DefaultBaseURL()), nil
}

// strategyOf is provider name's strategy row: --provider-strategy's, else
// the batch's; a shared limit is the provider's own, under its own key.
func (rs *routes) strategyOf(name string) *loadgen.Row {
	st := rs.st
	if spec, ok := rs.specs[name]; ok {
		st = spec
	}
	if st.Shared != nil {
		c, sh := *st, *st.Shared
		sh.Key += ":" + name
		c.Shared = &sh
		st = &c
	}
	return st
}

// save saves every route's adaptive state, returning the first error.
func (rs *routes) save() error {
	var first error
	for _, r := range rs.open {
		if err := r.saveState(r.strategy.Stats().Attempts); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// closeAll releases every route's strategy.
func (rs *routes) closeAll() {
	for _, r := range rs.open {
		r.close()
	}
}
