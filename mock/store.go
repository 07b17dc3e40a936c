package mock

import (
	"context"
	"net/http"
	"time"

	"github.com/ratelab/ratelab/mock/internal/admission"
	"github.com/ratelab/ratelab/mock/internal/wire"
	"github.com/redis/go-redis/v9"
)

// RedisStore is a Store in Redis (mock/internal/admission's): per key, a
// sorted set of leases scored by their expiry on Redis's clock. Call Close
// when done.
type RedisStore = admission.RedisStore

// The timing of RedisStore.
const (
	// StoreBeat is how often a RedisStore renews its leases and checks
	// the epochs of its keys.
	StoreBeat = admission.StoreBeat
	// StoreLeaseTTL is how long the slots of a replica that stopped
	// renewing them (a crash) stay taken.
	StoreLeaseTTL = admission.StoreLeaseTTL
	// StoreQuiet is how long a key grants no slot once its state was found
	// lost.
	StoreQuiet = admission.StoreQuiet
)

// NewRedisStore returns a Store in client's Redis under prefix: replicas
// that share limits use one Redis and one prefix.
func NewRedisStore(client redis.UniversalClient, prefix string) *RedisStore {
	return admission.NewRedisStore(client, prefix)
}

// rejection is an answer admitShared gives instead of admitting.
type rejection struct {
	status     int
	err        wire.APIError
	retryAfter time.Duration
	limit      string // for the rate-limit headers; "" for none
}

// admitShared takes one of limit slots of key in st, shared with the other
// replicas, or returns the answer to give instead: 429 max_concurrent when
// the slots are all taken (retry-after: retryAfter, or 1 s), overloaded when
// the store cannot be reached. The Server's lock is not held: the store may
// take a network round trip, bounded by ctx, the request's.
func (s *Server) admitShared(ctx context.Context, st Store, key string, limit int, retryAfter time.Duration, d *decision, wr wire.Format) *rejection {
	lease, ok, err := st.Acquire(ctx, key, limit)
	if err != nil {
		// Logged once per outage, not once per request.
		if ctx.Err() == nil && !s.storeDown.Swap(true) {
			s.log.Warn("mock: limit store unavailable; answering overloaded until it is back", "err", err)
		}
		return &rejection{status: wr.OverloadStatus(), err: wire.APIError{Msg: "Overloaded (limit store unavailable)"}}
	}
	if s.storeDown.Swap(false) {
		s.log.Info("mock: limit store is back")
	}
	if !ok {
		v := admission.Verdict{Limit: wire.LimitConcurrency, RetryAfter: admission.CeilSeconds(retryAfter), Need: 1, Cap: limit}
		return &rejection{status: http.StatusTooManyRequests, err: wire.APIError{Msg: v.Message(""), Limit: v.Limit}, retryAfter: v.RetryAfter, limit: v.Limit}
	}
	d.lease, d.key = lease, key
	return nil
}

// releaseShared frees the shared slot of d, if it took one. Call it without
// the Server's lock: it is a network round trip.
func (s *Server) releaseShared(d *decision) {
	if d.lease != "" {
		s.cfg.Store.Release(d.key, d.lease)
		d.lease = ""
	}
}
