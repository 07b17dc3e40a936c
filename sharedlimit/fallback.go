package sharedlimit

import (
	"context"
	"errors"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// epochTTL is how long the epoch of a limit outlives its last process.
const epochTTL = 24 * time.Hour

// quietTime is how long a limit grants no slot after its state was found
// lost (FLUSHALL, a Redis restart without persistence) or a process came back
// from a loss: two heartbeats, in which every live process notices and
// re-asserts its leases, plus the second go-redis's pool waits between dials
// once it has given up on a server.
func quietTime(leaseTTL time.Duration) time.Duration {
	return 2*min(leaseTTL/3, time.Second) + time.Second
}

// errModeChanged: the fallback ended while a call waited in it; ask again.
var errModeChanged = errors.New("sharedlimit: redis is back")

// fallback admits calls while Redis is lost, to this process's share of
// each limit: requests through a strategies.TokenBucket, tokens through a
// strategies.TokenFirst, and slots by counting this process's calls.
//
// The slots: the other processes may have held more than their share when
// Redis went (the shared line gives slots to whoever waits), and nothing
// tells this process how many. So until LeaseTTL after the loss (the time
// the calls started then take to end, LeaseTTL being above a call's p99
// latency) it admits a call only in place of one of its own that ended,
// holding at most min(share, the calls it ran at the loss); only then its
// whole share. Each process then holds at most what it held, and the sum
// stays within the limit.
type fallback struct {
	share int                     // concurrency share; 0 when not limited
	held  int                     // calls this process ran when Redis went, at most share
	until time.Time               // when held stops applying
	rpm   *strategies.TokenBucket // nil when requests are not paced
	tf    *strategies.TokenFirst  // nil when tokens are not budgeted
}

// newFallback returns the fallback of one of peers processes, which runs
// held calls at the loss. Its token burst stays the whole TokenBurst, so
// that no call the shared budget would admit is refused; it refills at the
// process's share of TPM.
func newFallback(cfg Config, peers, held int, now time.Time) *fallback {
	n := float64(peers)
	f := &fallback{until: now.Add(cfg.LeaseTTL)}
	if cfg.MaxConcurrent > 0 {
		f.share = max(1, cfg.MaxConcurrent/peers)
		f.held = min(held, f.share)
	}
	if cfg.RPM > 0 {
		f.rpm = strategies.NewTokenBucket(strategies.TokenBucketConfig{RPM: cfg.RPM / n, RequestBurst: cfg.RequestBurst})
	}
	if cfg.TPM > 0 {
		f.tf = strategies.NewTokenFirst(strategies.TokenFirstConfig{TPM: cfg.TPM / n, TokenBurst: cfg.TokenBurst})
	}
	return f
}

// slots returns how many calls this process may run at now, and until when
// that holds (zero: for good).
func (f *fallback) slots(now time.Time) (int, time.Time) {
	if now.Before(f.until) {
		return f.held, f.until
	}
	return f.share, time.Time{}
}

// localPermit is a call admitted by a fallback.
type localPermit struct {
	rpm, tf strategies.Permit // nil when not paced, not budgeted
}

func (l *localPermit) observe(o strategies.Outcome) {
	if l.rpm != nil {
		l.rpm.Observe(o)
	}
	if l.tf != nil {
		l.tf.Observe(o)
	}
}

func (l *localPermit) done(o strategies.Outcome) {
	if l.rpm != nil {
		l.rpm.Done(o)
	}
	if l.tf != nil {
		l.tf.Done(o)
	}
}

// fallback returns the fallback while Redis is lost, nil otherwise.
func (s *Shared) fallback() *fallback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fb
}

// acquireLocal admits a call through fb, adding its waits to w. It returns
// errModeChanged when fb ended meanwhile.
func (s *Shared) acquireLocal(ctx context.Context, fb *fallback, c strategies.Cost, w *strategies.Waits) (*permit, error) {
	if err := s.waitLocalGate(ctx, w); err != nil {
		return nil, err
	}
	lp := &localPermit{}
	giveBack := func(err error) {
		lp.done(strategies.Outcome{Kind: strategies.Canceled, Err: err})
	}
	if fb.rpm != nil {
		p, err := fb.rpm.Acquire(ctx, c)
		if err != nil {
			return nil, err
		}
		lp.rpm = p
		*w = w.Add(p.(strategies.WaitReporter).Waited())
	}
	if fb.tf != nil {
		p, err := fb.tf.Acquire(ctx, c)
		if err != nil {
			giveBack(err)
			return nil, err
		}
		lp.tf = p
		*w = w.Add(p.(strategies.WaitReporter).Waited())
	}
	for {
		now := time.Now()
		s.mu.Lock()
		if s.fb != fb {
			s.mu.Unlock()
			giveBack(errModeChanged)
			return nil, errModeChanged
		}
		n, until := fb.slots(now)
		if s.cfg.MaxConcurrent == 0 || s.leased < n {
			lease := ""
			if s.cfg.MaxConcurrent > 0 {
				lease = s.leaseID()
			}
			p := s.registerLocked(lease, false, 0, lp, *w)
			s.mu.Unlock()
			p.start()
			return p, nil
		}
		freed := s.freed
		s.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !until.IsZero() {
			t = time.NewTimer(until.Sub(now))
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		w.Slot += time.Since(now)
		if err := ctx.Err(); err != nil {
			giveBack(err)
			return nil, err
		}
	}
}

// lose switches to the fallback after a Redis failure, once per loss.
func (s *Shared) lose(err error) {
	now := time.Now()
	s.mu.Lock()
	if s.fb != nil || s.closed {
		s.mu.Unlock()
		return
	}
	peers := max(s.peers, s.cfg.Peers, 1)
	running := s.leased
	s.fb = newFallback(s.cfg, peers, running, now)
	share, held := s.fb.share, s.fb.held
	s.stats.Limit = float64(share)
	s.emitLocked(strategies.Event{Time: now, Type: EventRedisLost, Value: float64(share), Reason: err.Error()})
	s.mu.Unlock()
	s.cfg.Logger.Warn("sharedlimit: redis lost; admitting calls to this process's share of the limit until it is back",
		"key", s.cfg.Key, "peers", peers, "max_concurrent", share, "running", running,
		"held_for", s.cfg.LeaseTTL, "held", held,
		"rpm", s.cfg.RPM/float64(peers), "tpm", s.cfg.TPM/float64(peers), "err", err)
	s.wake()
}

// monitor beats every s.beat until Close: the heartbeat counts the peers,
// finds a lost state (a new epoch) and, while Redis is lost, is the probe
// that finds it back.
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
		epoch, err := s.heartbeat(ctx, true)
		switch {
		case err != nil:
			s.lose(err)
		case s.fallback() != nil:
			s.recover(ctx)
		default:
			s.mu.Lock()
			changed := epoch != s.epoch
			s.mu.Unlock()
			if changed {
				if err := s.reassert(ctx); err != nil {
					s.lose(err)
				}
			}
		}
		cancel()
	}
}

// heartbeat registers this process among the peers, counts them and returns
// the epoch; lost says that a missing epoch means a lost state.
func (s *Shared) heartbeat(ctx context.Context, lost bool) (int64, error) {
	ttl := max(s.cfg.LeaseTTL, 3*s.beat)
	flag := 0
	if lost {
		flag = 1
	}
	r, err := beatScript.Run(ctx, s.client, []string{s.keys.peers, s.keys.epoch, s.keys.quiet},
		s.id, ttl.Microseconds(), s.quietUS, epochTTL.Milliseconds(), flag).Int64Slice()
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.peers = int(r[0])
	s.mu.Unlock()
	return r[1], nil
}

// reassert registers the lease of every call running here in Redis, quiets
// the limit so that the other processes may do the same before any slot is
// granted, and takes the epoch it finds. It is what this process does when
// Redis lost its state or comes back after a loss.
func (s *Shared) reassert(ctx context.Context) error {
	s.mu.Lock()
	var ps []*permit
	args := []any{s.leaseUS, s.quietUS, epochTTL.Milliseconds()}
	for p := range s.live {
		if p.lease != "" {
			ps = append(ps, p)
			args = append(args, p.lease)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	epoch, err := reassertScript.Run(ctx, s.client, []string{s.keys.leases, s.keys.epoch, s.keys.quiet}, args...).Int64()
	if err != nil {
		return err
	}
	s.mu.Lock()
	changed := epoch != s.epoch
	s.epoch = epoch
	s.mu.Unlock()
	for _, p := range ps {
		p.registered.Store(true)
		// A call that ended while its lease was re-asserted released
		// nothing, or released it before: release it (again).
		if p.done.Load() {
			s.release(p.lease, 0)
		}
	}
	if changed {
		s.cfg.Logger.Warn("sharedlimit: redis lost the shared state; re-asserted this process's running calls",
			"key", s.cfg.Key, "leases", len(ps), "quiet", micros(s.quietUS))
	}
	return nil
}

// recover goes back to the shared limits. It first re-asserts the lease of
// every call still running (those the fallback let in, and those whose
// leases lapsed while Redis was lost), quieting the limit until the other
// processes have done the same, and releases the leases of the calls that
// ended meanwhile.
func (s *Shared) recover(ctx context.Context) {
	if err := s.reassert(ctx); err != nil {
		s.lose(err)
		return
	}
	s.mu.Lock()
	if s.fb == nil {
		s.mu.Unlock()
		return
	}
	s.fb = nil
	orphans := s.orphans
	s.orphans = nil
	// Calls the fallback let in after reassert listed the running ones.
	var late []*permit
	for p := range s.live {
		if p.lease != "" && !p.registered.Load() {
			late = append(late, p)
		}
	}
	adopted := s.leased
	s.stats.Limit = float64(s.cfg.MaxConcurrent)
	s.emitLocked(strategies.Event{Time: time.Now(), Type: EventRedisRecovered, Value: float64(s.cfg.MaxConcurrent)})
	s.mu.Unlock()
	s.adopt(ctx, late)
	for _, lease := range orphans {
		s.release(lease, 0)
	}
	s.cfg.Logger.Info("sharedlimit: redis is back; shared limits apply again after the quiet time",
		"key", s.cfg.Key, "adopted", adopted, "quiet", micros(s.quietUS))
	s.wake()
}

// adopt registers the leases of ps in Redis, best effort.
func (s *Shared) adopt(ctx context.Context, ps []*permit) {
	if len(ps) == 0 {
		return
	}
	args := []any{s.leaseUS}
	for _, p := range ps {
		args = append(args, p.lease)
	}
	if err := renewScript.Run(ctx, s.client, []string{s.keys.leases}, args...).Err(); err != nil {
		s.lose(err)
		return
	}
	for _, p := range ps {
		p.registered.Store(true)
		if p.done.Load() {
			s.release(p.lease, 0)
		}
	}
}

// leaseLost reports a lease that had expired after going unrenewed for
// unrenewed: a running call's, put back so that the call counts again, or
// (running false) a grant's that reached this process too late, whose call
// waits for another slot instead of starting.
func (s *Shared) leaseLost(lease string, unrenewed time.Duration, running bool) {
	reason, msg := lease, "sharedlimit: a running call's lease had expired and was taken again; raise lease_ttl above the longest stall"
	if !running {
		reason += ": granted after it expired; the call waits for another slot"
		msg = "sharedlimit: a slot's lease expired before its grant arrived; waiting for another slot; raise lease_ttl above the longest stall"
	}
	s.mu.Lock()
	s.emitLocked(strategies.Event{Time: time.Now(), Type: EventLeaseLost, Value: unrenewed.Seconds(), Reason: reason})
	s.mu.Unlock()
	s.cfg.Logger.Warn(msg, "key", s.cfg.Key, "lease", lease, "unrenewed_for", unrenewed, "lease_ttl", s.cfg.LeaseTTL)
}
