package sharedlimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/strategies"
)

// Polling bounds for a process's head waiter while the shared slots are all
// taken. A release publishes on the limit's channel and wakes the waiters at
// once; polling only catches what publishes nothing (expired leases, a lost
// message), backing off from pollMin to pollMax.
const (
	pollMin = 5 * time.Millisecond
	pollMax = 200 * time.Millisecond
	// waiterTTL is how long a process keeps its place in the shared line
	// without asking again; its head asks at least every pollMax.
	waiterTTL = 2 * time.Second
)

// Shared is a strategies.Strategy whose limits are shared through Redis by
// every process that uses the same Config.Key: at most MaxConcurrent calls in
// flight across all of them, at most RPM requests and TPM tokens a minute,
// and a retry-after gate that a throttle seen by any one of them closes for
// all.
//
// Stats reports Limit (MaxConcurrent, or the local share during a fallback),
// Rate and Delay (from RPM), Tokens (the shared budget available after the
// last reservation), InFlight (this process's calls) and Queued (callers in
// Acquire). Shared is safe for concurrent use; call Close when done.
// How it admits a call is the package doc's section Admitting a call; what
// it does when Redis fails, the section When Redis fails.
type Shared struct {
	cfg     Config
	client  redis.UniversalClient
	owned   bool // Close closes client
	keys    keyspace
	id      string // this process in the shared line and among the peers
	reqStep float64
	tokStep float64
	leaseUS int64
	beat    time.Duration
	quietUS int64 // how long a limit stays quiet after its state was lost

	turn chan struct{} // the head of the local line waiting for a slot holds it

	mu        sync.Mutex
	stats     strategies.Stats
	fb        *fallback // non-nil while Redis is lost
	peers     int       // processes sharing the limit, as last seen
	epoch     int64     // the epoch of the state in Redis, as last seen
	live      map[*permit]struct{}
	leased    int           // live permits holding a lease
	freed     chan struct{} // closed and replaced when a slot may have freed
	gateUntil time.Time
	closed    bool
	orphans   []string // leases of calls that ended while Redis was lost

	seq     atomic.Uint64
	closing chan struct{}
	wg      sync.WaitGroup
	pubsub  *redis.PubSub
}

var _ strategies.Strategy = (*Shared)(nil)

// ErrUnreachable is wrapped by New's error when Redis does not answer.
var ErrUnreachable = errors.New("sharedlimit: redis unreachable")

// New connects to Redis and returns a Shared strategy configured by cfg. It
// fails when cfg is invalid, naming the field, or, with an error wrapping
// ErrUnreachable and naming the address, when Redis does not answer within
// ctx and cfg.OpTimeout. Call Close when done.
func New(ctx context.Context, cfg Config) (*Shared, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Shared{
		cfg:     cfg,
		client:  cfg.Client,
		keys:    newKeyspace(cfg.Key),
		id:      processID(),
		leaseUS: cfg.LeaseTTL.Microseconds(),
		beat:    min(cfg.LeaseTTL/3, time.Second),
		quietUS: quietTime(cfg.LeaseTTL).Microseconds(),
		turn:    make(chan struct{}, 1),
		live:    make(map[*permit]struct{}),
		freed:   make(chan struct{}),
		closing: make(chan struct{}),
	}
	s.turn <- struct{}{}
	if cfg.RPM > 0 {
		s.reqStep = 60e6 / cfg.RPM
		s.stats.Rate = cfg.RPM / 60
		s.stats.Delay = 60 / cfg.RPM
	}
	if cfg.TPM > 0 {
		s.tokStep = 60e6 / cfg.TPM
		s.stats.Tokens = float64(cfg.TokenBurst)
	}
	s.stats.Limit = float64(cfg.MaxConcurrent)

	addr := "server"
	if cfg.URL != "" {
		opts, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("sharedlimit: redis URL: %w", err)
		}
		addr = opts.Addr
		s.client, s.owned = redis.NewClient(opts), true
	} else if c, ok := cfg.Client.(*redis.Client); ok {
		addr = c.Options().Addr
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	// A missing epoch is a new limit, unless processes are already
	// subscribed to its channel (subscriptions outlive FLUSHALL): then
	// Redis lost their state, and the limit stays quiet while they
	// re-assert their leases.
	subs, err := s.client.PubSubNumSub(pctx, s.keys.freed).Result()
	var epoch int64
	if err == nil {
		epoch, err = s.heartbeat(pctx, subs[s.keys.freed] > 0)
	}
	if err != nil {
		if s.owned {
			s.client.Close()
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, addr, err)
	}
	s.epoch = epoch

	s.pubsub = s.client.Subscribe(context.Background(), s.keys.freed)
	ch := s.pubsub.Channel()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		for range ch {
			s.wake()
		}
	}()
	go s.monitor()
	return s, nil
}

// processID returns an id unique to this process and Shared: host, pid and
// random bits.
func processID() string {
	host, _ := os.Hostname()
	var b [6]byte
	rand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

// Close stops the background work, leaves the shared line and the peers,
// and closes the client if New dialed it. Finish every permit first.
func (s *Shared) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.closing)
	err := s.pubsub.Close()
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	partScript.Run(ctx, s.client, []string{s.keys.peers, s.keys.waiters, s.keys.wexp}, s.id)
	if s.owned {
		if cerr := s.client.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("sharedlimit: close: %w", err)
	}
	return nil
}

// Acquire waits for the retry-after gate, the call's tokens and requests
// budget, then a slot, or until ctx ends; a call that gives up has its
// reservation returned. It returns an error wrapping
// strategies.ErrExceedsBudget, at once, for a call costing more than
// TokenBurst. A Redis failure does not fail it: the call is admitted by the
// local fallback instead.
func (s *Shared) Acquire(ctx context.Context, c strategies.Cost) (strategies.Permit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tokens := 0
	if s.tokStep > 0 {
		tokens = max(c.Tokens(), 0)
		if tokens > s.cfg.TokenBurst {
			return nil, fmt.Errorf("sharedlimit: %w: %d tokens, budget %d", strategies.ErrExceedsBudget, tokens, s.cfg.TokenBurst)
		}
	}
	s.update(func(st *strategies.Stats) { st.Queued++ })
	defer s.update(func(st *strategies.Stats) { st.Queued-- })
	var w strategies.Waits
	for {
		if fb := s.fallback(); fb != nil {
			p, err := s.acquireLocal(ctx, fb, c, &w)
			if errors.Is(err, errModeChanged) {
				continue
			}
			if err != nil {
				s.gaveUp(w)
				return nil, err // not a nil *permit in a non-nil Permit
			}
			return p, nil
		}
		p, err := s.acquireShared(ctx, tokens, &w)
		switch {
		case err == nil:
			return p, nil
		case ctx.Err() != nil:
			s.gaveUp(w)
			return nil, ctx.Err()
		default:
			// Whatever failed, Redis can no longer be relied on: fall back.
			s.lose(err)
		}
	}
}

// acquireShared admits a call through Redis. An error with ctx still alive
// is a Redis failure.
func (s *Shared) acquireShared(ctx context.Context, tokens int, w *strategies.Waits) (*permit, error) {
	if err := s.waitLocalGate(ctx, w); err != nil {
		return nil, err
	}
	reserved := false
	if s.reqStep > 0 || s.tokStep > 0 {
		for {
			r, err := s.run(ctx, budgetScript, []string{s.keys.gate, s.keys.rpm, s.keys.tpm},
				s.reqStep, s.cfg.RequestBurst, s.tokStep, s.cfg.TokenBurst, tokens)
			if err != nil {
				return nil, err
			}
			if r[2] == 1 {
				if err := sleep(ctx, micros(r[1]), &w.RetryAfter); err != nil {
					return nil, err
				}
				continue
			}
			if s.tokStep > 0 {
				s.update(func(st *strategies.Stats) { st.Tokens = float64(r[3]) })
			}
			reserved = true
			cause := &w.Tokens
			if s.tokStep == 0 {
				cause = &w.Slot // pacing to a request rate is a dispatch turn
			}
			if err := sleep(ctx, micros(r[1]), cause); err != nil {
				s.refund(tokens)
				return nil, err
			}
			break
		}
	}
	lease := ""
	if s.cfg.MaxConcurrent > 0 {
		var err error
		if lease, err = s.takeSlot(ctx, w); err != nil {
			if reserved {
				s.refund(tokens)
			}
			return nil, err
		}
	}
	s.mu.Lock()
	p := s.registerLocked(lease, true, tokens, nil, *w)
	s.mu.Unlock()
	p.start()
	return p, nil
}

// takeSlot waits in the local line, then, at its head, for a shared lease.
func (s *Shared) takeSlot(ctx context.Context, w *strategies.Waits) (string, error) {
	start := time.Now()
	select {
	case <-s.turn:
	case <-ctx.Done():
		w.Slot += time.Since(start)
		return "", ctx.Err()
	}
	defer func() { s.turn <- struct{}{} }()
	w.Slot += time.Since(start)

	lease := s.leaseID()
	poll := pollMin
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		freed := s.freedChan()
		t0 := time.Now()
		s.mu.Lock()
		epoch := s.epoch
		s.mu.Unlock()
		r, err := s.run(ctx, slotScript, []string{s.keys.leases, s.keys.waiters, s.keys.wexp, s.keys.gate, s.keys.epoch, s.keys.quiet},
			s.cfg.MaxConcurrent, lease, s.leaseUS, s.id, waiterTTL.Microseconds(), epoch, s.quietUS, epochTTL.Milliseconds())
		if err != nil {
			s.leaveLine()
			return "", err
		}
		switch {
		case r[0] == 1:
			took := time.Since(t0)
			w.Slot += took
			if took < s.cfg.LeaseTTL/3 {
				return lease, nil
			}
			// The grant took a third of the lease to arrive (this process
			// stalled, or Redis was slow): its lease may have expired
			// before its first renewal and its slot gone to another
			// process. Start the call only on a lease still held.
			held, err := s.confirm(ctx, lease)
			if err != nil {
				s.leaveLine()
				return "", err
			}
			if held {
				return lease, nil
			}
			s.leaseLost(lease, took, false)
			lease = s.leaseID()
			continue
		case r[2] == 1:
			if err := sleep(ctx, micros(r[1]), &w.RetryAfter); err != nil {
				s.leaveLine()
				return "", err
			}
			continue
		case r[2] == 2:
			// Redis lost the state (or another process found it lost):
			// count this process's calls there again before asking.
			if err := s.reassert(ctx); err != nil {
				return "", err
			}
			w.Slot += time.Since(t0)
			continue
		case r[2] == 3:
			if err := sleep(ctx, micros(r[1]), &w.Slot); err != nil {
				s.leaveLine()
				return "", err
			}
			continue
		}
		d := poll
		if hint := micros(r[1]); hint > 0 && hint < d {
			d = hint
		}
		poll = min(2*poll, pollMax)
		// Since Go 1.23 a Reset timer delivers no stale tick, so one timer
		// serves every round.
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-freed:
			poll = pollMin
		case <-timer.C:
		case <-ctx.Done():
			w.Slot += time.Since(t0)
			s.leaveLine()
			return "", ctx.Err()
		}
		w.Slot += time.Since(t0)
	}
}

// confirm extends lease if it is still held, and says whether it was.
func (s *Shared) confirm(ctx context.Context, lease string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	n, err := confirmScript.Run(ctx, s.client, []string{s.keys.leases}, s.leaseUS, lease).Int64()
	return n == 1, err
}

// leaveLine takes this process out of the shared line, best effort: a place
// left behind expires after waiterTTL.
func (s *Shared) leaveLine() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	leaveScript.Run(ctx, s.client, []string{s.keys.waiters, s.keys.wexp}, s.id)
}

// refund gives a reservation of one request and tokens back, best effort.
func (s *Shared) refund(tokens int) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	err := refundScript.Run(ctx, s.client, []string{s.keys.rpm, s.keys.tpm}, s.reqStep, 1, s.tokStep, tokens).Err()
	if err != nil {
		s.lose(err)
	}
}

// run runs a script bounded by OpTimeout and returns its integer replies.
func (s *Shared) run(ctx context.Context, sc *redis.Script, keys []string, args ...any) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OpTimeout)
	defer cancel()
	return sc.Run(ctx, s.client, keys, args...).Int64Slice()
}

// leaseID returns a new lease id, unique across processes.
func (s *Shared) leaseID() string {
	return s.id + "#" + strconv.FormatUint(s.seq.Add(1), 10)
}

// micros converts a script's microseconds to a duration.
func micros(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// sleep waits for d or until ctx ends, adding the time waited to *into.
func sleep(ctx context.Context, d time.Duration, into *time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		*into += d
		return nil
	case <-ctx.Done():
		*into += time.Since(start)
		return ctx.Err()
	}
}

// waitLocalGate waits until this process's copy of the retry-after gate is
// open.
func (s *Shared) waitLocalGate(ctx context.Context, w *strategies.Waits) error {
	for {
		s.mu.Lock()
		d := time.Until(s.gateUntil)
		s.mu.Unlock()
		if d <= 0 {
			return ctx.Err()
		}
		if err := sleep(ctx, d, &w.RetryAfter); err != nil {
			return err
		}
	}
}

// learn closes the retry-after gate for a throttle or overload that carries
// a retry-after: here at once, and in Redis for the other processes.
func (s *Shared) learn(o strategies.Outcome) {
	if (o.Kind != strategies.Throttled && o.Kind != strategies.Overloaded) || !o.HasRetryAfter || o.RetryAfter <= 0 {
		return
	}
	now := time.Now()
	until := now.Add(o.RetryAfter)
	s.mu.Lock()
	moved := until.After(s.gateUntil)
	if moved {
		s.gateUntil = until
		s.emitLocked(strategies.Event{Time: now, Type: strategies.EventGateClose, Until: until, Reason: o.Kind.String()})
	}
	fb := s.fb
	s.mu.Unlock()
	if !moved || fb != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.OpTimeout)
	defer cancel()
	if err := gateScript.Run(ctx, s.client, []string{s.keys.gate}, o.RetryAfter.Microseconds()).Err(); err != nil {
		s.lose(err)
	}
}

// freedChan returns the channel closed when a slot may next have freed.
func (s *Shared) freedChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freed
}

// wake tells the head waiter that a slot may have freed.
func (s *Shared) wake() {
	s.mu.Lock()
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
}

// Stats implements strategies.Strategy.
func (s *Shared) Stats() strategies.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Shared) update(f func(*strategies.Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// gaveUp records the waits of a caller whose Acquire failed.
func (s *Shared) gaveUp(w strategies.Waits) {
	s.update(func(st *strategies.Stats) { addWaits(st, w) })
}

func addWaits(st *strategies.Stats, w strategies.Waits) {
	st.WaitSlot += w.Slot
	st.WaitTokens += w.Tokens
	st.WaitRetryAfter += w.RetryAfter
}

// count counts an attempt's outcome as strategies' own meter does.
func count(st *strategies.Stats, o strategies.Outcome) {
	if o.Kind == strategies.Abandoned {
		st.Cancels++
		return
	}
	st.Attempts++
	switch o.Kind {
	case strategies.Success:
		st.Successes++
	case strategies.Throttled:
		st.Throttles++
	case strategies.Overloaded:
		st.Overloads++
	case strategies.Quota:
		st.Quota++
	case strategies.Canceled:
		st.Cancels++
	default:
		st.Errors++
	}
}

// emitLocked delivers e to the observer; s.mu is held, which orders events.
func (s *Shared) emitLocked(e strategies.Event) {
	if s.cfg.Observer != nil {
		s.cfg.Observer(e)
	}
}

// settledUsage returns what a call that reserved reserved tokens is charged
// when its last outcome is o, by strategies.TokenFirst's rules.
func settledUsage(o strategies.Outcome, reserved int) int {
	if used := o.Usage.Counted(); used > 0 {
		return used
	}
	switch o.Kind {
	case strategies.Throttled, strategies.Overloaded, strategies.Abandoned, strategies.Quota:
		return 0
	}
	return reserved
}
