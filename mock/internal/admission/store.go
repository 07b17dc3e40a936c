package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/keyid"
	"github.com/ratelab/ratelab/internal/leasescript"
)

// RedisStore is a Store in Redis: per key, a sorted set of leases scored
// by their expiry on Redis's clock, taken by a Lua script so that the count
// and the take are one atomic step. Keys are named
// PREFIX:{FINGERPRINT}:inflight, with the key's Fingerprint, so the API
// keys themselves never reach Redis.
//
// A background heartbeat (every StoreBeat) renews the leases of the
// requests this replica is answering, so a crashed replica's slots come
// back StoreLeaseTTL after its last heartbeat. Each key's state carries an
// epoch (PREFIX:{FINGERPRINT}:epoch): when Redis loses it (FLUSHALL, a
// restart without persistence), the next replica to notice creates a new
// one and quiets the key (PREFIX:{FINGERPRINT}:quiet) for StoreQuiet, in
// which every replica re-asserts the leases of its running requests at its
// next heartbeat and no slot is granted; requests arriving then wait it
// out. So the replicas together never hold more than the limit, even at the
// moment Redis comes back. Call Close when done.
type RedisStore struct {
	client  redis.UniversalClient
	prefix  string
	id      string // this store's leases, unique across replicas
	seq     atomic.Uint64
	timeout time.Duration
	beat    time.Duration // StoreBeat; shorter in tests

	mu      sync.Mutex
	keys    map[string]*storeKey // by Redis key base
	pubsub  *redis.PubSub        // this replica, among those of the prefix
	started bool                 // the heartbeat runs
	closed  bool
	start   sync.Once
	stop    chan struct{}
	done    chan struct{}
}

// storeKey is what a RedisStore knows of one API key's slots.
type storeKey struct {
	epoch  int64               // as last seen; 0: never
	leases map[string]struct{} // the requests answered here
	// failed: Redis failed since this key's leases were last asserted;
	// other replicas may have lost it too, so the next exchange re-asserts
	// them and quiets the key.
	failed bool
	// renew orders a heartbeat's renewal of the key's leases with Release:
	// without it a lease released while a beat was on its way to Redis was
	// added back by the beat and held a slot until it expired.
	renew sync.Mutex
}

var _ Store = (*RedisStore)(nil)

// The timing of RedisStore.
const (
	// StoreBeat is how often a RedisStore renews its leases and checks
	// the epochs of its keys.
	StoreBeat = 500 * time.Millisecond
	// StoreLeaseTTL is how long the slots of a replica that stopped
	// renewing them (a crash) stay taken.
	StoreLeaseTTL = 10 * time.Second
	// StoreQuiet is how long a key grants no slot once its state was found
	// lost: two heartbeats, plus the second go-redis's pool waits between
	// dials once it has given up on a server.
	StoreQuiet = 2*StoreBeat + time.Second
)

const storeEpochTTL = 24 * time.Hour

// NewRedisStore returns a Store in client's Redis under prefix: replicas
// that share limits use one Redis and one prefix.
func NewRedisStore(client redis.UniversalClient, prefix string) *RedisStore {
	var b [8]byte
	rand.Read(b[:])
	return &RedisStore{
		client: client, prefix: prefix, id: hex.EncodeToString(b[:]), timeout: time.Second, beat: StoreBeat,
		keys: make(map[string]*storeKey), stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// SetTimeout sets how long one Redis round trip may take before the
// request waiting for it is answered overloaded (1 s by default). Call it
// before the store is used.
func (r *RedisStore) SetTimeout(d time.Duration) { r.timeout = d }

// Close stops the heartbeat. The leases still held expire by themselves.
func (r *RedisStore) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	ps, started := r.pubsub, r.started
	r.mu.Unlock()
	close(r.stop)
	if ps != nil {
		ps.Close()
	}
	if started {
		<-r.done
	}
	return nil
}

// base returns the Redis key prefix of apiKey's state.
func (r *RedisStore) base(apiKey string) string {
	return r.prefix + ":{" + keyid.Fingerprint(apiKey) + "}:"
}

func (r *RedisStore) key(apiKey string) string { return r.base(apiKey) + "inflight" }

// storeAcquire: KEYS: inflight, epoch, quiet. ARGV: limit, lease, TTL (µs),
// the epoch the replica knows (0: none), quiet time (µs), epoch TTL (ms), 1
// when a missing epoch means a lost state. It returns {1, 0} when the lease
// was taken, {0, 0} when the slots are all taken, {2, epoch} when the epoch
// is not the one the replica knows (it must re-assert its leases first),
// {3, µs} while the key is quiet. The lease itself is internal/leasescript's,
// the one sharedlimit takes too.
var storeAcquire = redis.NewScript(leasescript.Prelude + `
local e = epoch(KEYS[2], KEYS[3], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1')
if e ~= ARGV[4] then return {2, tonumber(e)} end
local qt = redis.call('PTTL', KEYS[3])
if qt > 0 then return {3, qt * 1000} end
if not grant(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[3]), ARGV[2], 0) then return {0, 0} end
return {1, 0}
`)

// storeBeat renews a replica's leases of one key, or, when the epoch is not
// the one the replica knows (Redis lost the state, or it was lost by this
// replica), re-asserts them and quiets the key so that the other replicas
// may do the same before any slot is granted.
//
// KEYS: inflight, epoch, quiet. ARGV: TTL (µs), known epoch, quiet time
// (µs), epoch TTL (ms), 1 to re-assert whatever the epoch, then the leases.
// It returns the epoch.
var storeBeat = redis.NewScript(leasescript.Prelude + `
local q = tonumber(ARGV[3])
local e = epoch(KEYS[2], KEYS[3], q, tonumber(ARGV[4]), true)
if e ~= ARGV[2] or ARGV[5] == '1' then quiet(KEYS[3], q) end
renew(KEYS[1], tonumber(ARGV[1]), 6)
return tonumber(e)
`)

// Acquire implements Store.
func (r *RedisStore) Acquire(ctx context.Context, key string, limit int) (string, bool, error) {
	r.start.Do(func() { r.begin(ctx) })
	base := r.base(key)
	keys := []string{base + "inflight", base + "epoch", base + "quiet"}
	lease := r.id + ":" + strconv.FormatUint(r.seq.Add(1), 10)
	for {
		r.mu.Lock()
		k := r.keyLocked(base)
		known, failed := k.epoch, k.failed
		r.mu.Unlock()
		if failed && known != 0 {
			if err := r.beatKey(ctx, base); err != nil {
				r.fail()
				return "", false, fmt.Errorf("mock: redis store: %w", err)
			}
			continue
		}
		lost := 0
		if known == 0 && r.othersAlive(ctx) {
			lost = 1
		}
		octx, cancel := context.WithTimeout(ctx, r.timeout)
		res, err := storeAcquire.Run(octx, r.client, keys, limit, lease, StoreLeaseTTL.Microseconds(),
			known, StoreQuiet.Microseconds(), storeEpochTTL.Milliseconds(), lost).Int64Slice()
		cancel()
		if err != nil {
			r.fail()
			return "", false, fmt.Errorf("mock: redis store: %w", err)
		}
		switch res[0] {
		case 1:
			r.mu.Lock()
			k.leases[lease] = struct{}{}
			r.mu.Unlock()
			return lease, true, nil
		case 0:
			return "", false, nil
		case 2:
			if known == 0 {
				r.mu.Lock()
				k.epoch = res[1]
				k.failed = false
				r.mu.Unlock()
				continue
			}
			if err := r.beatKey(ctx, base); err != nil {
				r.fail()
				return "", false, fmt.Errorf("mock: redis store: %w", err)
			}
		case 3:
			t := time.NewTimer(time.Duration(res[1]) * time.Microsecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return "", false, ctx.Err()
			}
		}
	}
}

// keyLocked returns the state of the key base; r.mu is held.
func (r *RedisStore) keyLocked(base string) *storeKey {
	k, ok := r.keys[base]
	if !ok {
		k = &storeKey{leases: make(map[string]struct{})}
		r.keys[base] = k
	}
	return k
}

// Release implements Store. A lease it fails to remove expires by itself.
func (r *RedisStore) Release(key, lease string) {
	base := r.base(key)
	r.mu.Lock()
	k, ok := r.keys[base]
	r.mu.Unlock()
	if ok {
		// Not while a beat renews the key's leases (see storeKey.renew).
		k.renew.Lock()
		defer k.renew.Unlock()
		r.mu.Lock()
		delete(k.leases, lease)
		r.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	r.client.ZRem(ctx, base+"inflight", lease)
}

// begin joins the replicas of the prefix (a Pub/Sub subscription, which
// outlives FLUSHALL and tells a replica that starts on an empty Redis
// whether others were already running) and starts the heartbeat.
func (r *RedisStore) begin(ctx context.Context) {
	ps := r.client.Subscribe(context.WithoutCancel(ctx), r.prefix+":replicas")
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	ps.Receive(rctx) // the subscription's confirmation; best effort
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		ps.Close()
		return
	}
	r.pubsub, r.started = ps, true
	go r.heartbeat()
}

// othersAlive says whether other replicas of the prefix are running.
func (r *RedisStore) othersAlive(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ch := r.prefix + ":replicas"
	n, err := r.client.PubSubNumSub(ctx, ch).Result()
	return err == nil && n[ch] > 1
}

// heartbeat renews the leases every StoreBeat until Close.
func (r *RedisStore) heartbeat() {
	defer close(r.done)
	t := time.NewTicker(r.beat)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		r.mu.Lock()
		var bases []string
		for base, k := range r.keys {
			if len(k.leases) > 0 {
				bases = append(bases, base)
			}
		}
		r.mu.Unlock()
		for _, base := range bases {
			if err := r.beatKey(context.Background(), base); err != nil {
				r.fail()
				break
			}
		}
	}
}

// fail marks every key failed after a Redis error.
func (r *RedisStore) fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.keys {
		k.failed = true
	}
}

// beatKey renews this replica's leases of the key base and takes the epoch
// it finds; after a failure, or when the epoch changed, it re-asserts them
// and quiets the key.
func (r *RedisStore) beatKey(ctx context.Context, base string) error {
	r.mu.Lock()
	k := r.keyLocked(base)
	r.mu.Unlock()
	k.renew.Lock()
	defer k.renew.Unlock()
	r.mu.Lock()
	flag, failed := 0, k.failed
	if failed {
		flag = 1
	}
	args := []any{StoreLeaseTTL.Microseconds(), k.epoch, StoreQuiet.Microseconds(), storeEpochTTL.Milliseconds(), flag}
	for lease := range k.leases {
		args = append(args, lease)
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	e, err := storeBeat.Run(ctx, r.client, []string{base + "inflight", base + "epoch", base + "quiet"}, args...).Int64()
	if err != nil {
		return err
	}
	r.mu.Lock()
	k.epoch = e
	if failed {
		k.failed = false
	}
	r.mu.Unlock()
	return nil
}
