package sharedlimit

import (
	"context"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// fallback admits calls while Redis is lost, to this process's share of
// each limit: requests through a strategies.TokenBucket, then tokens and
// slots through a strategies.TokenFirst.
type fallback struct {
	share int                     // concurrency share; 0 when not limited
	rpm   *strategies.TokenBucket // nil when requests are not paced
	tf    *strategies.TokenFirst
}

// newFallback returns the fallback of one of peers processes. Its token
// burst stays the whole TokenBurst, so that no call the shared budget would
// admit is refused; it refills at the process's share of TPM.
func newFallback(cfg Config, peers int) *fallback {
	n := float64(peers)
	f := &fallback{}
	if cfg.MaxConcurrent > 0 {
		f.share = max(1, cfg.MaxConcurrent/peers)
	}
	if cfg.RPM > 0 {
		f.rpm = strategies.NewTokenBucket(strategies.TokenBucketConfig{RPM: cfg.RPM / n, RequestBurst: cfg.RequestBurst})
	}
	f.tf = strategies.NewTokenFirst(strategies.TokenFirstConfig{
		TPM:           cfg.TPM / n,
		TokenBurst:    cfg.TokenBurst,
		MaxConcurrent: f.share,
	})
	return f
}

// localPermit is a call admitted by a fallback.
type localPermit struct {
	rpm, tf strategies.Permit // rpm nil when requests are not paced
}

func (l *localPermit) observe(o strategies.Outcome) {
	if l.rpm != nil {
		l.rpm.Observe(o)
	}
	l.tf.Observe(o)
}

func (l *localPermit) done(o strategies.Outcome) {
	if l.rpm != nil {
		l.rpm.Done(o)
	}
	l.tf.Done(o)
}

// fallback returns the fallback while Redis is lost, nil otherwise.
func (s *Shared) fallback() *fallback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fb
}

// acquireLocal admits a call through fb, adding its waits to w.
func (s *Shared) acquireLocal(ctx context.Context, fb *fallback, c strategies.Cost, w *strategies.Waits) (*permit, error) {
	if err := s.waitLocalGate(ctx, w); err != nil {
		return nil, err
	}
	lp := &localPermit{}
	if fb.rpm != nil {
		p, err := fb.rpm.Acquire(ctx, c)
		if err != nil {
			return nil, err
		}
		lp.rpm = p
		*w = w.Add(p.(strategies.WaitReporter).Waited())
	}
	p, err := fb.tf.Acquire(ctx, c)
	if err != nil {
		if lp.rpm != nil {
			lp.rpm.Done(strategies.Outcome{Kind: strategies.Canceled, Err: err})
		}
		return nil, err
	}
	lp.tf = p
	*w = w.Add(p.(strategies.WaitReporter).Waited())
	lease := ""
	if s.cfg.MaxConcurrent > 0 {
		lease = s.leaseID()
	}
	pm := s.newPermit(lease, false, 0, lp, *w)
	if lease != "" && s.fallback() == nil {
		// Redis came back while this call waited: count it there now.
		s.adopt([]*permit{pm})
	}
	return pm, nil
}

// lose switches to the fallback after a Redis failure, once per loss.
func (s *Shared) lose(err error) {
	s.mu.Lock()
	if s.fb != nil || s.closed {
		s.mu.Unlock()
		return
	}
	peers := max(s.peers, s.cfg.Peers, 1)
	s.fb = newFallback(s.cfg, peers)
	share := s.fb.share
	s.stats.Limit = float64(share)
	s.emitLocked(strategies.Event{Time: time.Now(), Type: EventRedisLost, Value: float64(share), Reason: err.Error()})
	s.mu.Unlock()
	s.cfg.Logger.Warn("sharedlimit: redis lost; admitting calls to this process's share of the limit until it is back",
		"key", s.cfg.Key, "peers", peers, "max_concurrent", share,
		"rpm", s.cfg.RPM/float64(peers), "tpm", s.cfg.TPM/float64(peers), "err", err)
	s.wake()
}

// monitor beats every s.beat until Close: the heartbeat counts the peers
// and, while Redis is lost, is the probe that finds it back.
func (s *Shared) monitor() {
	defer s.wg.Done()
	t := time.NewTicker(s.beat)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
		if err := s.heartbeat(ctx); err != nil {
			s.lose(err)
		} else if s.fallback() != nil {
			s.recover(ctx)
		}
		cancel()
	}
}

// heartbeat registers this process among the peers and counts them.
func (s *Shared) heartbeat(ctx context.Context) error {
	ttl := max(s.cfg.LeaseTTL, 3*s.beat)
	n, err := beatScript.Run(ctx, s.client, []string{s.keys.peers}, s.id, ttl.Microseconds()).Int64()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.peers = int(n)
	s.mu.Unlock()
	return nil
}

// recover goes back to the shared limits. It first registers the lease of
// every call still running (those the fallback let in, and those whose
// leases lapsed while Redis was lost), so that the shared count includes
// them, and releases the leases of the calls that ended meanwhile.
func (s *Shared) recover(ctx context.Context) {
	s.mu.Lock()
	var ps []*permit
	for p := range s.live {
		if p.lease != "" {
			ps = append(ps, p)
		}
	}
	orphans := s.orphans
	s.mu.Unlock()
	if !s.adoptCtx(ctx, ps) {
		return
	}
	for _, lease := range orphans {
		if err := releaseScript.Run(ctx, s.client, []string{s.keys.leases, s.keys.tpm}, lease, s.keys.freed, 0, 0).Err(); err != nil {
			s.lose(err)
			return
		}
	}
	s.mu.Lock()
	if s.fb == nil {
		s.mu.Unlock()
		return
	}
	s.fb = nil
	s.orphans = s.orphans[len(orphans):]
	s.stats.Limit = float64(s.cfg.MaxConcurrent)
	s.emitLocked(strategies.Event{Time: time.Now(), Type: EventRedisRecovered, Value: float64(s.cfg.MaxConcurrent)})
	s.mu.Unlock()
	s.cfg.Logger.Info("sharedlimit: redis is back; shared limits apply again", "key", s.cfg.Key, "adopted", len(ps))
	// A call that ended while its lease was being adopted released nothing.
	for _, p := range ps {
		if p.done.Load() {
			s.release(p.lease, 0)
		}
	}
}

// adopt registers the leases of ps in Redis, best effort.
func (s *Shared) adopt(ps []*permit) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	s.adoptCtx(ctx, ps)
	for _, p := range ps {
		if p.done.Load() {
			s.release(p.lease, 0)
		}
	}
}

func (s *Shared) adoptCtx(ctx context.Context, ps []*permit) bool {
	if len(ps) == 0 {
		return true
	}
	args := []any{s.leaseUS}
	for _, p := range ps {
		args = append(args, p.lease)
	}
	if err := renewScript.Run(ctx, s.client, []string{s.keys.leases}, args...).Err(); err != nil {
		s.lose(err)
		return false
	}
	for _, p := range ps {
		p.registered.Store(true)
	}
	return true
}

// leaseLost reports a running call whose lease had expired.
func (s *Shared) leaseLost(lease string) {
	s.mu.Lock()
	s.emitLocked(strategies.Event{Time: time.Now(), Type: EventLeaseLost, Reason: lease})
	s.mu.Unlock()
	s.cfg.Logger.Warn("sharedlimit: a running call's lease had expired and was taken again; raise lease_ttl above the longest stall",
		"key", s.cfg.Key, "lease", lease, "lease_ttl", s.cfg.LeaseTTL)
}
