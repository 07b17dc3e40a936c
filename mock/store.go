package mock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Store holds the concurrency slots of the API keys that several replicas
// of the mock share (Config.Store), so that N replicas behind a load
// balancer enforce one limits.max_concurrent per key between them; the
// per-minute buckets stay per replica. The Server calls it with its lock
// held, so it must answer quickly and not call back into the Server. Its
// state survives Reset.
type Store interface {
	// Acquire takes one of limit slots of key for a request until Release,
	// or until ttl has passed (a replica that crashes leaves nothing
	// behind). ok is false when all are taken.
	Acquire(key string, limit int, ttl time.Duration) (lease string, ok bool, err error)
	// Release frees a slot Acquire took.
	Release(key, lease string)
}

// RedisStore is a Store in Redis: per key, a sorted set of leases scored
// by their expiry on Redis's clock, taken by a Lua script so that the count
// and the take are one atomic step. Keys are named
// PREFIX:{FINGERPRINT}:inflight, with the key's Fingerprint, so the API
// keys themselves never reach Redis.
type RedisStore struct {
	client  redis.UniversalClient
	prefix  string
	id      string // this store's leases, unique across replicas
	seq     atomic.Uint64
	timeout time.Duration
}

var _ Store = (*RedisStore)(nil)

// NewRedisStore returns a Store in client's Redis under prefix: replicas
// that share limits use one Redis and one prefix.
func NewRedisStore(client redis.UniversalClient, prefix string) *RedisStore {
	var b [8]byte
	rand.Read(b[:])
	return &RedisStore{client: client, prefix: prefix, id: hex.EncodeToString(b[:]), timeout: time.Second}
}

func (r *RedisStore) key(apiKey string) string {
	return r.prefix + ":{" + Fingerprint(apiKey) + "}:inflight"
}

// storeAcquire: KEYS: the key's set. ARGV: limit, lease, TTL (µs). It
// returns 1 when the lease was taken.
var storeAcquire = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
local ms = math.ceil(ttl / 1000)
if redis.call('PTTL', KEYS[1]) < ms then redis.call('PEXPIRE', KEYS[1], ms) end
return 1
`)

// Acquire implements Store.
func (r *RedisStore) Acquire(key string, limit int, ttl time.Duration) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	lease := r.id + ":" + strconv.FormatUint(r.seq.Add(1), 10)
	n, err := storeAcquire.Run(ctx, r.client, []string{r.key(key)}, limit, lease, ttl.Microseconds()).Int64()
	if err != nil {
		return "", false, fmt.Errorf("mock: redis store: %w", err)
	}
	return lease, n == 1, nil
}

// Release implements Store. A lease it fails to remove expires by itself.
func (r *RedisStore) Release(key, lease string) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	r.client.ZRem(ctx, r.key(key), lease)
}

// storeLeaseMargin is how long a shared slot outlives its response's
// planned end, should the replica holding it die before releasing it.
const storeLeaseMargin = time.Minute

// rejection is an answer admitShared gives instead of admitting.
type rejection struct {
	status     int
	err        apiError
	retryAfter time.Duration
	limit      string // for the rate-limit headers; "" for none
}

// admitShared takes a slot of key in st, shared with the other replicas,
// for a response planned as p, or returns the answer to give instead: 429
// max_concurrent when the slots are all taken (retry-after: limits.retry_after,
// or 1 s), overloaded when the store cannot be reached.
func (s *Server) admitShared(st Store, now time.Time, key string, d *decision, p plan, wr wire) *rejection {
	lease, ok, err := st.Acquire(key, s.limits.MaxConcurrent, p.due(p.n).Sub(now)+storeLeaseMargin)
	if err != nil {
		s.log.Warn("mock: limit store unavailable; answering overloaded", "err", err)
		return &rejection{status: wr.overloadStatus(), err: apiError{msg: "Overloaded (limit store unavailable)"}}
	}
	if !ok {
		v := verdict{limit: LimitConcurrency, retryAfter: ceilSeconds(s.limits.RetryAfter), need: 1, cap: s.limits.MaxConcurrent}
		return &rejection{status: http.StatusTooManyRequests, err: apiError{msg: limitMessage(v, nil), limit: v.limit}, retryAfter: v.retryAfter, limit: v.limit}
	}
	d.lease, d.key = lease, key
	return nil
}

// releaseShared frees the shared slot of d, if it took one.
func (s *Server) releaseShared(d *decision) {
	if d.lease != "" {
		s.cfg.Store.Release(d.key, d.lease)
		d.lease = ""
	}
}
