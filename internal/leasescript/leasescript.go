// Package leasescript is the Redis lease, written once in Lua for the two
// sides that hold concurrency slots in Redis: the mock's replicas
// (mock/internal/admission.RedisStore, the server's shared max_concurrent)
// and the client's processes (sharedlimit, a fleet's shared limit). It
// holds vocabulary only, the script text, and no client or server logic.
//
// A limit's slots are a sorted set of leases scored by their expiry in
// microseconds on Redis's own clock (TIME), so that machines whose clocks
// disagree share one timeline. A holder renews its leases before they
// expire; a crashed holder's slots come back when its leases do. Each
// limit's state carries an epoch: when Redis loses it (FLUSHALL, a restart
// without persistence), the first holder to notice creates a new one and
// quiets the limit for the time every live holder needs to re-assert its
// leases, so that no slot is granted on a count that lacks them.
package leasescript

// Prelude defines, for a script that follows it:
//
//   - now: Redis's clock, in microseconds.
//   - keep(key, ms): extends key's expiry to at least ms milliseconds.
//   - quiet(qkey, q): makes sure no slot is granted for the next q µs (qkey
//     exists, with a PX expiry, while the limit is quiet).
//   - epoch(ekey, qkey, q, ettl, lost): the state's epoch, kept for ettl
//     ms. A missing epoch means a new limit or one whose state Redis lost:
//     it is created (as now) and, when lost says the caller knows the state
//     existed, the limit is quieted for q µs.
//   - grant(lkey, limit, ttl, lease, ahead): sweeps the expired leases of
//     the sorted set lkey and, when the leases in use plus ahead (holders
//     served first) are below limit, adds lease until now + ttl µs and
//     returns the leases in use with it; otherwise returns false.
//   - renew(lkey, ttl, from): sets the expiry of the leases ARGV[from], …
//     to now + ttl µs, adding those that had gone (their calls are still
//     running and must be counted), and returns how many were added.
const Prelude = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function keep(key, ms)
  local ttl = redis.call('PTTL', key)
  if ttl ~= -2 and ttl < ms then redis.call('PEXPIRE', key, ms) end
end
local function quiet(qkey, q)
  local ms = math.ceil(q / 1000)
  if redis.call('PTTL', qkey) < ms then redis.call('SET', qkey, '1', 'PX', ms) end
end
local function epoch(ekey, qkey, q, ettl, lost)
  local e = redis.call('GET', ekey)
  if not e then
    e = string.format('%.0f', now)
    if lost then quiet(qkey, q) end
  end
  redis.call('SET', ekey, e, 'PX', ettl)
  return e
end
local function grant(lkey, limit, ttl, lease, ahead)
  redis.call('ZREMRANGEBYSCORE', lkey, '-inf', now)
  local used = redis.call('ZCARD', lkey)
  if used + ahead >= limit then return false end
  redis.call('ZADD', lkey, now + ttl, lease)
  keep(lkey, math.ceil(ttl / 1000) + 1000)
  return used + 1
end
local function renew(lkey, ttl, from)
  local added = 0
  for i = from, #ARGV do
    added = added + redis.call('ZADD', lkey, now + ttl, ARGV[i])
  end
  keep(lkey, math.ceil(ttl / 1000) + 1000)
  return added
end
`
