package sharedlimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/strategies"
)

// FleetConfig configures a Fleet. Every process sharing the learned limit
// uses the same Key.
type FleetConfig struct {
	// URL or Client: the Redis server, as for Config. Set exactly one.
	URL    string
	Client redis.UniversalClient
	// Key names the shared limit, as Config.Key.
	Key string
	// Interval is how often the Fleet exchanges with Redis (publishes what
	// this process learned, reads the fleet's limit, renews its heartbeat
	// among the peers). 0 means 100 ms. A learned limit or a wanted probe
	// token is sent at once.
	Interval time.Duration
	// OpTimeout bounds each Redis round trip. 0 means 2 s.
	OpTimeout time.Duration
	// Logger receives a warning when Redis fails. nil means slog.Default().
	Logger *slog.Logger
}

// Fleet is a strategies.Fleet on Redis: the Adaptive strategies of every
// process using the same FleetConfig.Key share each key's learned limit, so
// that together they discover and hold one limit instead of each probing to
// the whole of it (see strategies.AdaptiveConfig.Fleet).
//
// The fleet's limit of a key is the last one any process published (a
// throttle publishes a lower one, a held probe a higher one), kept in a hash
// that lives as long as some peer renews it; the peers are the processes
// whose heartbeat (ratelab:{KEY}:peers, as for Shared) has not expired. The
// probe token is a key set with SET NX for the probe's hold, so one process
// at a time probes above its share. Fleet answers Adaptive from memory and
// talks to Redis in a goroutine of its own; while Redis fails it keeps the
// last answers and logs a warning. Call Close when done.
type Fleet struct {
	cfg    FleetConfig
	client redis.UniversalClient
	owned  bool
	keys   keyspace
	id     string

	mu    sync.Mutex
	peers int
	state map[string]*fleetKey
	lost  bool

	kick    chan struct{}
	once    sync.Once
	closing chan struct{}
	done    chan struct{}
}

var _ strategies.Fleet = (*Fleet)(nil)

// fleetKey is what a Fleet knows of one provider and key.
type fleetKey struct {
	limit   int           // the fleet's limit; 0 while unknown
	publish int           // a limit learned here, not yet sent
	want    time.Duration // a probe token is wanted for this long; 0 if not
	asked   time.Time     // when Probe last asked for it
	until   time.Time     // this process holds the token until then
}

// fleetTTL is how long the fleet's limits outlive the last peer's exchange.
const fleetTTL = time.Minute

// NewFleet connects to Redis and returns a Fleet. It fails when cfg is
// invalid or, with an error wrapping ErrUnreachable, when Redis does not
// answer within ctx and cfg.OpTimeout.
func NewFleet(ctx context.Context, cfg FleetConfig) (*Fleet, error) {
	switch {
	case cfg.URL == "" && cfg.Client == nil:
		return nil, errors.New("sharedlimit: no redis: set redis (a URL) or Client")
	case cfg.URL != "" && cfg.Client != nil:
		return nil, errors.New("sharedlimit: both redis (a URL) and Client are set; set one")
	case cfg.Key == "":
		return nil, errors.New("sharedlimit: key is empty; name the shared limit")
	case strings.ContainsAny(cfg.Key, "{}"):
		return nil, fmt.Errorf("sharedlimit: key %q contains '{' or '}'", cfg.Key)
	case cfg.Interval < 0 || cfg.OpTimeout < 0:
		return nil, errors.New("sharedlimit: interval and op_timeout must not be negative")
	}
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = defaultOpTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &Fleet{
		cfg: cfg, client: cfg.Client, keys: newKeyspace(cfg.Key), id: processID(),
		peers: 1, state: make(map[string]*fleetKey),
		kick: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{}),
	}
	addr := "server"
	if cfg.URL != "" {
		opts, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("sharedlimit: redis URL: %w", err)
		}
		addr = opts.Addr
		f.client, f.owned = redis.NewClient(opts), true
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	if err := f.exchange(pctx); err != nil {
		if f.owned {
			f.client.Close()
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, addr, err)
	}
	go f.loop()
	return f, nil
}

// Share implements strategies.Fleet.
func (f *Fleet) Share(provider, key string, learned int) (limit, peers int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keyLocked(provider, key)
	if learned > 0 {
		k.limit, k.publish = learned, learned
		f.kickLocked()
	}
	return k.limit, max(1, f.peers)
}

// Probe implements strategies.Fleet.
func (f *Fleet) Probe(provider, key string, hold time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keyLocked(provider, key)
	if time.Now().Before(k.until) {
		return true
	}
	k.asked = time.Now()
	if k.want == 0 {
		f.kickLocked()
	}
	k.want = max(hold, time.Millisecond)
	return false
}

// Close stops the exchanges, leaves the peers, and closes the client if
// NewFleet dialed it.
func (f *Fleet) Close() error {
	first := false
	f.once.Do(func() { first = true; close(f.closing) })
	if !first {
		return nil
	}
	<-f.done
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.OpTimeout)
	defer cancel()
	err := f.client.ZRem(ctx, f.keys.peers, f.id).Err()
	if f.owned {
		if cerr := f.client.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("sharedlimit: close: %w", err)
	}
	return nil
}

func (f *Fleet) keyLocked(provider, key string) *fleetKey {
	field := provider + "/" + key
	k, ok := f.state[field]
	if !ok {
		k = &fleetKey{}
		f.state[field] = k
	}
	return k
}

func (f *Fleet) kickLocked() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// loop exchanges with Redis every Interval, and at once when kicked.
func (f *Fleet) loop() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-f.closing:
			return
		case <-t.C:
		case <-f.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.OpTimeout)
		err := f.exchange(ctx)
		cancel()
		f.mu.Lock()
		switch {
		case err != nil && !f.lost:
			f.lost = true
			f.cfg.Logger.Warn("sharedlimit: fleet: redis lost; keeping the last fleet limits", "key", f.cfg.Key, "err", err)
		case err == nil && f.lost:
			f.lost = false
			f.cfg.Logger.Info("sharedlimit: fleet: redis recovered", "key", f.cfg.Key)
		}
		f.mu.Unlock()
	}
}

// exchange runs fleetScript once: it sends the limits learned here and the
// wanted probe tokens, and reads the fleet's limits and peers.
func (f *Fleet) exchange(ctx context.Context) error {
	f.mu.Lock()
	fields := make([]string, 0, len(f.state))
	args := []any{f.id, (3 * f.cfg.Interval).Microseconds() + 1_000_000, fleetTTL.Milliseconds()}
	keys := []string{f.keys.peers, f.keys.fleet}
	sent := map[string]int{}
	for field, k := range f.state {
		if k.want > 0 && time.Since(k.asked) > 2*f.cfg.Interval {
			k.want = 0 // no longer asked for
		}
		fields = append(fields, field)
		keys = append(keys, f.keys.probe(field))
		args = append(args, field, k.publish, k.want.Milliseconds())
		sent[field] = k.publish
	}
	f.mu.Unlock()

	res, err := fleetScript.Run(ctx, f.client, keys, args...).Int64Slice()
	if err != nil {
		return err
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peers = int(res[0])
	for i, field := range fields {
		k := f.state[field]
		if k.publish == sent[field] {
			k.publish = 0
			if lim := int(res[1+2*i]); lim > 0 {
				k.limit = lim
			}
		}
		if got := res[2+2*i]; got > 0 {
			k.until = now.Add(time.Duration(got) * time.Millisecond)
			k.want = 0
		}
	}
	return nil
}

// fleetScript records a process's heartbeat among the peers, publishes the
// limits it learned, takes the probe tokens it wants, and reads the fleet's
// limits.
//
// KEYS: peers, fleet (hash: provider/key → limit), then one probe token key
// per field. ARGV: process id, heartbeat TTL (µs), fleet TTL (ms), then per
// field: field, limit learned here (0: none), token wanted for ms (0: not).
// It returns {peers, then per field: the fleet's limit (0 unknown), ms this
// process holds the token for (0: not held)}.
var fleetScript = redis.NewScript(luaPrelude + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
keep(KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000) + 1000)
local out = {redis.call('ZCARD', KEYS[1])}
local n = 0
for i = 4, #ARGV, 3 do
  n = n + 1
  local field, learned, want = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if learned > 0 then redis.call('HSET', KEYS[2], field, learned) end
  out[#out + 1] = tonumber(redis.call('HGET', KEYS[2], field) or '0')
  local tok = KEYS[2 + n]
  local held = 0
  if want > 0 then
    if redis.call('SET', tok, ARGV[1], 'NX', 'PX', want) then
      held = want
    elseif redis.call('GET', tok) == ARGV[1] then
      held = math.max(0, redis.call('PTTL', tok))
    end
  end
  out[#out + 1] = held
end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3])) end
return out
`)
