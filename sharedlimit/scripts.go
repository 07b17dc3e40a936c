package sharedlimit

import (
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/leasescript"
)

// keyspace names the Redis keys of one shared limit. Every key carries the
// limit's name as a hash tag ({Key}), so that in a Redis Cluster they live in
// one slot and a script may touch several of them.
//
//	ratelab:{K}:leases   sorted set: lease id → expiry (µs, Redis clock)
//	ratelab:{K}:waiters  sorted set: waiting process → arrival (µs); FIFO order
//	ratelab:{K}:wexp     sorted set: waiting process → expiry of its place (µs)
//	ratelab:{K}:peers    sorted set: process → expiry of its heartbeat (µs)
//	ratelab:{K}:rpm      string: GCRA theoretical arrival time of requests (µs)
//	ratelab:{K}:tpm      string: GCRA theoretical arrival time of tokens (µs)
//	ratelab:{K}:gate     string: when the retry-after gate opens (µs), PX expiry
//	ratelab:{K}:freed    Pub/Sub channel: a lease was released
//	ratelab:{K}:fleet    hash: provider/key → the fleet's learned limit (Fleet)
//	ratelab:{K}:probe:P  string: the holder of provider/key P's probe token, PX expiry (Fleet)
//	ratelab:{K}:epoch    string: when this state was created (µs, Redis clock); see epoch below
//	ratelab:{K}:quiet    string, PX expiry: while it exists no slot is granted (see epoch below)
//
// Every key expires by itself when nobody uses the limit any more.
type keyspace struct {
	leases, waiters, wexp, peers, rpm, tpm, gate, freed string
	epoch, quiet                                        string
	fleet                                               string
	prefix                                              string
}

// probe returns the key of the probe token of the field provider/key.
func (k keyspace) probe(field string) string { return k.prefix + "probe:" + field }

func newKeyspace(name string) keyspace {
	p := "ratelab:{" + name + "}:"
	return keyspace{
		leases:  p + "leases",
		waiters: p + "waiters",
		wexp:    p + "wexp",
		peers:   p + "peers",
		rpm:     p + "rpm",
		tpm:     p + "tpm",
		gate:    p + "gate",
		freed:   p + "freed",
		epoch:   p + "epoch",
		quiet:   p + "quiet",
		fleet:   p + "fleet",
		prefix:  p,
	}
}

// all returns every key (not the channel), for cleaning up.
func (k keyspace) all() []string {
	return []string{k.leases, k.waiters, k.wexp, k.peers, k.rpm, k.tpm, k.gate, k.fleet, k.epoch, k.quiet}
}

// luaPrelude is shared by every script: the lease (now, keep, quiet,
// epoch, grant, renew) is internal/leasescript's, the one the mock's
// replicas take too (mock/internal/admission.RedisStore); gatewait and
// settle are the shared limit's own.
const luaPrelude = leasescript.Prelude + `
local function gatewait(key)
  local g = tonumber(redis.call('GET', key) or '0')
  if g > now then return math.ceil(g - now) end
  return 0
end
-- settle moves a GCRA theoretical arrival time back by n units of step µs
-- (a refund), or forward for a negative n (a charge); an empty bucket is
-- never refilled past full.
local function settle(key, step, n)
  if step <= 0 or n == 0 then return end
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local new = tat - n * step
  if new <= now then
    redis.call('DEL', key)
  else
    redis.call('SET', key, string.format('%.3f', new), 'PX', math.ceil((new - now) / 1000) + 1000)
  end
end
`

// slotScript tries to take a lease for a process's head waiter.
//
// KEYS: leases, waiters, wexp, gate, epoch, quiet. ARGV: limit, lease id,
// lease TTL (µs), waiter id, waiter TTL (µs), the epoch the process knows,
// quiet time (µs), epoch TTL (ms).
//
// It returns {1, leases in use, 0} when granted; {0, the epoch, 2} when the
// epoch is not the one the process knows (it must re-assert its leases
// first); {0, µs until the quiet time ends, 3} while the limit is quiet;
// {0, µs until the gate opens, 1} when the retry-after gate is closed;
// otherwise {0, µs until the earliest lease expires (0 if none), 0}, with
// the waiter in line. A process is granted a lease only when the waiters
// ahead of it could all take one too, so that processes are served in the
// order they started waiting.
var slotScript = redis.NewScript(luaPrelude + `
local e = epoch(KEYS[5], KEYS[6], tonumber(ARGV[7]), tonumber(ARGV[8]), true)
if e ~= ARGV[6] then return {0, tonumber(e), 2} end
local qt = redis.call('PTTL', KEYS[6])
if qt > 0 then return {0, qt * 1000, 3} end
local g = gatewait(KEYS[4])
if g > 0 then return {0, g, 1} end
local limit, ttl, wttl = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[5])
for _, w in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do
  redis.call('ZREM', KEYS[2], w)
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZADD', KEYS[2], 'NX', now, ARGV[4])
redis.call('ZADD', KEYS[3], now + wttl, ARGV[4])
keep(KEYS[2], math.ceil(wttl / 1000) * 2)
keep(KEYS[3], math.ceil(wttl / 1000) * 2)
local got = grant(KEYS[1], limit, ttl, ARGV[2], redis.call('ZRANK', KEYS[2], ARGV[4]))
if got then
  redis.call('ZREM', KEYS[2], ARGV[4])
  redis.call('ZREM', KEYS[3], ARGV[4])
  return {1, got, 0}
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local hint = 0
if first[2] then hint = math.max(0, math.ceil(tonumber(first[2]) - now)) end
return {0, hint, 0}
`)

// leaveScript takes a waiter out of line. KEYS: waiters, wexp. ARGV: waiter id.
var leaveScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 0
`)

// renewScript extends leases (or adopts them: a lease that has gone is
// added again, since its call is still in flight and must be counted).
//
// KEYS: leases. ARGV: lease TTL (µs), then the lease ids. It returns how many
// leases had gone and were added again.
var renewScript = redis.NewScript(luaPrelude + `
return renew(KEYS[1], tonumber(ARGV[1]), 2)
`)

// confirmScript extends a lease only if it is still there: a grant that
// took a third of the lease TTL to reach its process may have expired, and
// its slot gone to another process. A lease past its expiry that no slot
// request has swept yet gave its slot to nobody, so it is extended too.
//
// KEYS: leases. ARGV: lease TTL (µs), lease id. It returns 1 when the lease
// was held and is extended, 0 when it had gone (it is not added back).
var confirmScript = redis.NewScript(luaPrelude + `
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
local ttl = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
keep(KEYS[1], math.ceil(ttl / 1000) + 1000)
return 1
`)

// releaseScript ends a call: it drops its lease, wakes the waiting
// processes, and settles its token reservation.
//
// KEYS: leases, tpm. ARGV: lease id (empty for none), channel, µs per token,
// tokens to give back (negative: to charge).
var releaseScript = redis.NewScript(luaPrelude + `
if ARGV[1] ~= '' and redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('PUBLISH', ARGV[2], '1')
end
settle(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
return 0
`)

// budgetScript reserves one request and n tokens by GCRA (generic cell rate
// algorithm): each dimension keeps a theoretical arrival time TAT; a
// reservation of n units of step µs moves it to max(TAT, now) + n·step, and
// may start once that is within burst·step of now. The reservation is taken
// at once and the caller waits out the returned delay, so callers across all
// processes start in the order they reserved, without polling.
//
// KEYS: gate, rpm, tpm. ARGV: µs per request (0: requests not limited),
// request burst, µs per token (0: tokens not limited), token burst, tokens.
//
// It returns {1, µs to wait, 0, tokens available after the reservation
// (negative while reservations wait)}, or {0, µs until the gate opens, 1, 0}
// without reserving anything when the retry-after gate is closed.
var budgetScript = redis.NewScript(luaPrelude + `
local g = gatewait(KEYS[1])
if g > 0 then return {0, g, 1, 0} end
local wait, avail = 0, 0
local plans = {}
local function plan(key, step, burst, n)
  if step <= 0 then return nil end
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local new = tat + n * step
  if new - burst * step - now > wait then wait = new - burst * step - now end
  plans[#plans + 1] = {key, new}
  return (burst * step - (new - now)) / step
end
plan(KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2]), 1)
avail = plan(KEYS[3], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])) or 0
for _, p in ipairs(plans) do
  redis.call('SET', p[1], string.format('%.3f', p[2]), 'PX', math.ceil((p[2] - now) / 1000) + 1000)
end
return {1, math.ceil(wait), 0, math.floor(avail)}
`)

// refundScript gives back a reservation: KEYS: rpm, tpm. ARGV: µs per
// request, requests, µs per token, tokens (negative: to charge).
var refundScript = redis.NewScript(luaPrelude + `
settle(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
settle(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
return 0
`)

// gateScript closes the retry-after gate for ARGV[1] µs, or keeps it closed
// until later if it already is. KEYS: gate. It returns 1 when that moved the
// opening time.
var gateScript = redis.NewScript(luaPrelude + `
local d = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur >= now + d then return 0 end
redis.call('SET', KEYS[1], string.format('%.3f', now + d), 'PX', math.ceil(d / 1000))
return 1
`)

// beatScript records a process's heartbeat and returns {how many processes
// share the limit, the epoch}. KEYS: peers, epoch, quiet. ARGV: process id,
// heartbeat TTL (µs), quiet time (µs), epoch TTL (ms), 1 when a missing
// epoch means a lost state (else 0: a new limit).
var beatScript = redis.NewScript(luaPrelude + `
local e = epoch(KEYS[2], KEYS[3], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
keep(KEYS[1], math.ceil(tonumber(ARGV[2]) / 1000) + 1000)
return {redis.call('ZCARD', KEYS[1]), tonumber(e)}
`)

// reassertScript registers the leases of a process's running calls after
// Redis lost them or was lost (a process that admitted calls through its
// fallback, or whose state was wiped), and quiets the limit for q µs from
// now, so that the other processes have the time to re-assert theirs before
// any slot is granted on a count that lacks them.
//
// KEYS: leases, epoch, quiet. ARGV: lease TTL (µs), quiet time (µs), epoch
// TTL (ms), then the lease ids. It returns the epoch.
var reassertScript = redis.NewScript(luaPrelude + `
local q = tonumber(ARGV[2])
local e = epoch(KEYS[2], KEYS[3], q, tonumber(ARGV[3]), true)
quiet(KEYS[3], q)
renew(KEYS[1], tonumber(ARGV[1]), 4)
return tonumber(e)
`)

// partScript removes a process from the peers and from the line.
// KEYS: peers, waiters, wexp. ARGV: process id.
var partScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 0
`)
