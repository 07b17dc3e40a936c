package sharedlimit

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// permit is the Permit Shared returns, admitted through Redis or, while
// Redis is lost, through the local fallback.
type permit struct {
	s      *Shared
	lease  string // lease id; "" when concurrency is not limited
	tokens int    // reserved from the shared token budget; 0 when none
	local  *localPermit
	waits  strategies.Waits

	// registered says the lease is in Redis: from the start for a permit
	// admitted through Redis, from its adoption for one the fallback let in.
	registered atomic.Bool
	done       atomic.Bool
	stop       chan struct{} // closed by Done: stop renewing
	stopped    chan struct{} // closed when the renewal goroutine returns
}

var (
	_ strategies.Permit       = (*permit)(nil)
	_ strategies.WaitReporter = (*permit)(nil)
)

// registerLocked records the grant; s.mu is held. Call start after
// unlocking.
func (s *Shared) registerLocked(lease string, registered bool, tokens int, local *localPermit, w strategies.Waits) *permit {
	p := &permit{s: s, lease: lease, tokens: tokens, local: local, waits: w, stop: make(chan struct{}), stopped: make(chan struct{})}
	p.registered.Store(registered)
	s.stats.Permits++
	s.stats.InFlight++
	addWaits(&s.stats, w)
	s.live[p] = struct{}{}
	if lease != "" {
		s.leased++
	}
	return p
}

// start starts renewing the lease, if any.
func (p *permit) start() {
	if p.lease == "" {
		close(p.stopped)
	} else {
		go p.renew()
	}
}

// renew extends the lease every LeaseTTL/3 until Done. While Redis is lost
// it does nothing; afterwards it adopts the lease of a call the fallback let
// in (recover does it first, for all of them at once).
func (p *permit) renew() {
	defer close(p.stopped)
	s := p.s
	t := time.NewTicker(s.cfg.LeaseTTL / 3)
	defer t.Stop()
	last := time.Now() // when the lease was last set, as sent from here
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		if s.fallback() != nil {
			continue
		}
		tick := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
		added, err := renewScript.Run(ctx, s.client, []string{s.keys.leases}, s.leaseUS, p.lease).Int64()
		cancel()
		if err != nil {
			s.lose(err)
			continue
		}
		if added > 0 && p.registered.Load() {
			s.leaseLost(p.lease, tick.Sub(last), true)
		}
		last = tick
		p.registered.Store(true)
	}
}

// Observe implements strategies.Permit.
func (p *permit) Observe(o strategies.Outcome) {
	if p.done.Load() {
		panic("sharedlimit: Observe after Done")
	}
	if o.Kind == strategies.Abandoned {
		panic("sharedlimit: Observe with kind abandoned")
	}
	p.s.update(func(st *strategies.Stats) { count(st, o) })
	p.s.learn(o)
	if p.local != nil {
		p.local.observe(o)
		return
	}
	// An attempt that used tokens (a stream cut mid-way) is charged on top:
	// the retry spends the reservation again.
	if used := o.Usage.InputTokens + o.Usage.OutputTokens; p.tokens > 0 && used > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), p.s.cfg.OpTimeout)
		defer cancel()
		err := refundScript.Run(ctx, p.s.client, []string{p.s.keys.rpm, p.s.keys.tpm}, 0, 0, p.s.tokStep, -used).Err()
		if err != nil {
			p.s.lose(err)
		}
	}
}

// Done implements strategies.Permit: it settles the token reservation and
// releases the lease.
func (p *permit) Done(o strategies.Outcome) {
	if p.done.Swap(true) {
		panic("sharedlimit: Done called more than once")
	}
	s := p.s
	s.mu.Lock()
	count(&s.stats, o)
	s.stats.InFlight--
	delete(s.live, p)
	if p.lease != "" {
		s.leased--
	}
	local := s.fb != nil
	s.mu.Unlock()
	if local {
		s.wake() // a fallback's waiters count the calls running here
	}
	s.learn(o)

	// Stop renewing before releasing, or a renewal under way could put the
	// lease back after it was released.
	close(p.stop)
	<-p.stopped

	give := 0
	if p.local != nil {
		p.local.done(o)
	} else if p.tokens > 0 {
		give = p.tokens - settledUsage(o, p.tokens)
	}
	if (p.lease == "" && give == 0) || (p.local != nil && !p.registered.Load()) {
		return
	}
	s.mu.Lock()
	if s.fb != nil {
		// Released when Redis is back (the tokens stay spent), or expires.
		if p.lease != "" {
			s.orphans = append(s.orphans, p.lease)
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.release(p.lease, give)
}

// release drops a lease ("" for none) and gives tokens back, best effort.
func (s *Shared) release(lease string, give int) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	err := releaseScript.Run(ctx, s.client, []string{s.keys.leases, s.keys.tpm}, lease, s.keys.freed, s.tokStep, give).Err()
	if err != nil {
		s.lose(err)
	}
}

// Waited implements strategies.WaitReporter.
func (p *permit) Waited() strategies.Waits { return p.waits }
