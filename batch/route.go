package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Route is where a batch sends the input lines that name one provider in
// their metadata ({"provider": "gemini", "model": "gemini-2.5-flash"}):
// the provider's own client and its own strategy instance, so that one
// provider's limits, 429s and learning never hold up another's (as
// strategies.PerProvider keeps one semaphore per provider).
type Route struct {
	// Client makes the provider's calls (a *provider.Client of that
	// provider, usually). Required.
	Client engine.Client
	// Strategy admits the provider's calls: an instance of its own, not
	// shared with Batch.Config.Strategy or another route. Required.
	Strategy strategies.Strategy
	// Model is the model of the provider's lines that name none
	// (metadata.model).
	Model string
}

// route is a Route in use: the provider's name and how to cost its calls.
type route struct {
	Route
	name string
	cost func(provider.Request) strategies.Cost
	into engine.ClientInto // Client, when it writes in place
}

// router is the engine.Client and the strategy of a batch whose lines name
// their providers: each call goes to its item's route (by its id, the
// request's IdempotencyKey), else to the batch's own client and strategy.
type router struct {
	def     engine.Client
	defInto engine.ClientInto
	defCost func(provider.Request) strategies.Cost
	defName string
	make    func(string) (*Route, error)
	// refuse, when set, is the problem of a line naming another provider
	// than defName, when make is nil.
	refuse string
	// oneModel, when set, is the only model a line may name
	// (metadata.model): OpenAI's Batch API takes one per batch.
	oneModel string

	mu     sync.RWMutex
	routes map[string]*route // by provider
	failed map[string]error  // providers whose Route could not be made

	items sync.Map // IdempotencyKey (the item's id) -> *route, for the items in progress
}

// newRouter returns the router of batch b, whose Provider and Routes are
// set.
func newRouter(b *Batch) *router {
	return &router{defName: b.Provider, make: b.Routes, routes: make(map[string]*route), failed: make(map[string]error)}
}

// route returns the route of provider name, making it on first use; nil
// for the batch's own provider.
func (r *router) route(name string) (*route, error) {
	if name == "" || name == r.defName {
		return nil, nil
	}
	r.mu.RLock()
	rt, err := r.routes[name], r.failed[name]
	r.mu.RUnlock()
	if rt != nil || err != nil {
		return rt, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt, err := r.routes[name], r.failed[name]; rt != nil || err != nil {
		return rt, err
	}
	if r.make == nil {
		msg := r.refuse
		if msg == "" {
			msg = "this batch sends every line to " + r.defName + " (Batch.Routes is not set)"
		}
		err = errors.New(msg)
	} else {
		var ro *Route
		if ro, err = r.make(name); err == nil && (ro == nil || ro.Client == nil || ro.Strategy == nil) {
			err = fmt.Errorf("batch: Routes(%q) returned no client or strategy", name)
		}
		if err == nil {
			rt = &route{Route: *ro, name: name, cost: costOf(ro.Client)}
			rt.into, _ = ro.Client.(engine.ClientInto)
			r.routes[name] = rt
			return rt, nil
		}
	}
	r.failed[name] = err
	return nil, err
}

// used reports whether any line named a provider of a route.
func (r *router) used() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.routes) > 0
}

// wrap returns cfg with its client and strategy routed.
func (r *router) wrap(cfg engine.Config) engine.Config {
	r.def, r.defCost = cfg.Client, costOf(cfg.Client)
	r.defInto, _ = cfg.Client.(engine.ClientInto)
	cfg.Client = r
	cfg.Strategy = routedStrategy{def: cfg.Strategy, r: r}
	return cfg
}

// costOf is how the engine costs c's calls.
func costOf(c engine.Client) func(provider.Request) strategies.Cost {
	if cc, ok := c.(engine.Coster); ok {
		return cc.Cost
	}
	return func(req provider.Request) strategies.Cost {
		return strategies.Cost{InputTokens: provider.EstimateTokens(req), MaxTokens: req.MaxTokens}
	}
}

// assign sends the calls of the item with id to rt (nil: the batch's own).
func (r *router) assign(id string, rt *route) {
	if rt != nil {
		r.items.Store(id, rt)
	}
}

// release forgets the item with id, which has ended.
func (r *router) release(id string) { r.items.Delete(id) }

// of returns the route of req's item, or nil.
func (r *router) of(req *provider.Request) *route { return r.ofID(req.IdempotencyKey) }

// ofID returns the route of the item with id, or nil.
func (r *router) ofID(id string) *route {
	if v, ok := r.items.Load(id); ok {
		return v.(*route)
	}
	return nil
}

var (
	_ engine.ClientInto = (*router)(nil)
	_ engine.Coster     = (*router)(nil)
)

// Do implements engine.Client.
func (r *router) Do(ctx context.Context, req provider.Request, attempt int) (provider.Response, strategies.Outcome) {
	if rt := r.of(&req); rt != nil {
		return rt.Client.Do(ctx, req, attempt)
	}
	return r.def.Do(ctx, req, attempt)
}

// DoInto implements engine.ClientInto.
func (r *router) DoInto(ctx context.Context, req *provider.Request, attempt int, out *provider.Response, o *strategies.Outcome) {
	c, into := r.def, r.defInto
	if rt := r.of(req); rt != nil {
		c, into = rt.Client, rt.into
	}
	if into != nil {
		into.DoInto(ctx, req, attempt, out, o)
		return
	}
	*out, *o = c.Do(ctx, *req, attempt)
}

// Cost implements engine.Coster: a routed call's Provider is its route's
// name, which routedStrategy admits it by.
func (r *router) Cost(req provider.Request) strategies.Cost {
	if rt := r.of(&req); rt != nil {
		c := rt.cost(req)
		c.Provider = rt.name
		return c
	}
	c := r.defCost(req)
	if c.Provider != "" && c.Provider != r.defName {
		r.mu.RLock()
		_, clash := r.routes[c.Provider]
		r.mu.RUnlock()
		if clash { // the batch's own client names a route's provider: keep them apart
			c.Provider = r.defName
		}
	}
	return c
}

// routedStrategy admits each call by the strategy of its route (by
// Cost.Provider), else by the batch's own.
type routedStrategy struct {
	def strategies.Strategy
	r   *router
}

// Clock is the batch's strategy's clock, the run's.
func (s routedStrategy) Clock() clock.Clock { return strategies.ClockOf(s.def) }

func (s routedStrategy) Acquire(ctx context.Context, c strategies.Cost) (strategies.Permit, error) {
	if c.Provider != "" && c.Provider != s.r.defName {
		s.r.mu.RLock()
		rt := s.r.routes[c.Provider]
		s.r.mu.RUnlock()
		if rt != nil {
			return rt.Strategy.Acquire(ctx, c)
		}
	}
	return s.def.Acquire(ctx, c)
}

// Stats sums the strategies' stats; Limit is 0 (unbounded) when any is.
func (s routedStrategy) Stats() strategies.Stats {
	st := s.def.Stats()
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	for _, rt := range s.r.routes {
		st = addStats(st, rt.Strategy.Stats())
	}
	return st
}

// Strategies returns the batch's strategy and each route's, by provider
// (the batch's own under its Provider).
func (s routedStrategy) Strategies() map[string]strategies.Strategy {
	m := map[string]strategies.Strategy{s.r.defName: s.def}
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	for name, rt := range s.r.routes {
		m[name] = rt.Strategy
	}
	return m
}

func addStats(a, b strategies.Stats) strategies.Stats {
	if a.Limit == 0 || b.Limit == 0 {
		a.Limit = 0
	} else {
		a.Limit += b.Limit
	}
	a.InFlight += b.InFlight
	a.Rate += b.Rate
	a.Tokens += b.Tokens
	a.Queued += b.Queued
	a.Delay = max(a.Delay, b.Delay)
	if a.Bound == "" {
		a.Bound = b.Bound
	}
	a.WaitSlot += b.WaitSlot
	a.WaitTokens += b.WaitTokens
	a.WaitRetryAfter += b.WaitRetryAfter
	a.Permits += b.Permits
	a.Attempts += b.Attempts
	a.Successes += b.Successes
	a.Throttles += b.Throttles
	a.Overloads += b.Overloads
	a.Errors += b.Errors
	a.Cancels += b.Cancels
	a.Quota += b.Quota
	return a
}
