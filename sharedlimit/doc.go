// Package sharedlimit owns ratelab's limits shared across processes and
// machines through Redis: a strategies.Strategy (Shared) whose concurrency
// slots, requests-per-minute and tokens-per-minute budgets and retry-after
// gate are held in one Redis server, so that every process calling a
// provider with one API key stays, together, within that key's limits.
//
// It is a package of its own so that the core strategies package imports no
// Redis client. The state lives under keys named after Config.Key, with the
// key as a Redis Cluster hash tag (ratelab:{KEY}:leases, …; see keyspace in
// scripts.go); every decision is one Lua script, atomic and on Redis's own
// clock (TIME), so the processes' clocks need not agree.
//
// Fleet shares what strategies.Adaptive learns instead of a fixed limit (see
// strategies.AdaptiveConfig.Fleet): the processes publish the limit they
// learn under ratelab:{KEY}:fleet, each holds its share of it (the fleet's
// limit over the live peers of ratelab:{KEY}:peers), and a probe token
// (ratelab:{KEY}:probe:…, SET NX with the probe's hold as its expiry) lets
// one process at a time probe above its share.
//
// # Admitting a call
//
// Shared.Acquire works like strategies.TokenFirst, on shared state: it waits
// for the retry-after gate, reserves one request and the call's Cost.Tokens()
// from the shared budgets (a GCRA reservation on Redis's clock; waits count as
// Waits.Tokens, or as Waits.Slot when only requests are paced), then takes a
// shared slot (a lease; waits count as Waits.Slot). Within a process, callers
// wait in arrival order and only the first asks Redis; across processes, slots
// go to the processes in the order they started waiting. Done settles the
// token reservation to the reported usage (see strategies.TokenFirst for the
// rules) and releases the lease.
//
// A lease expires LeaseTTL after its last renewal. A goroutine per held
// permit renews it every LeaseTTL/3 until Done, so the slots of a process
// that crashed come back within LeaseTTL while those of a slow call do not.
//
// A throttle (429) or overload (529/503) with a retry-after, passed to
// Observe or Done, closes the gate for that delay in this process at once and
// in Redis for the others.
//
// # Deploying
//
// Run one Redis that every worker reaches (persistence is not needed: the
// state is minutes old at most), and give every worker sharing an API key
// the same Config: URL, Key, limits, bursts and LeaseTTL. Set Peers to the
// number of workers, so that a worker that loses Redis before it has seen
// the others still takes only its share.
//
// # Sizing the TTLs
//
// A running call renews its lease every LeaseTTL/3, so a call may last any
// time. LeaseTTL bounds two other things: how long the slots of a crashed
// worker stay taken (they come back LeaseTTL after its last renewal), and
// the longest stall (a GC pause, a frozen VM, a starved CPU, Redis
// unreachable) a running call's lease survives: 2/3 of LeaseTTL, the lease
// minus the time between renewals. Set it above a call's p99 latency, so
// that a call keeps its slot even if every renewal fails, and well above the
// longest stall you expect; the default, 60 s, suits calls of up to a minute.
//
// A lease cannot tell a stalled worker from a crashed one: a worker stalled
// longer than that loses the leases of the calls it runs, other workers may
// take their slots, and the limit is exceeded by at most those calls until
// they end. The stalled worker counts them again at their next renewal
// (EventLeaseLost, Value the stall in seconds), so that no slot is granted
// until the count is back under the limit. A grant that took more than a
// third of LeaseTTL to reach its worker is confirmed before the call starts;
// if its lease had gone, the call waits for another slot instead.
//
// # When Redis fails
//
// At New, an unreachable Redis is an error. Mid-run, the first failed
// operation (or one slower than OpTimeout) makes Shared log a warning and
// report EventRedisLost, and admit calls through a local fallback (a
// strategies.TokenBucket for RPM, then a strategies.TokenFirst) sized to
// this worker's share of each limit (MaxConcurrent/n at least 1, RPM/n,
// TPM/n, with n from Config.Peers and the workers last seen), counting the
// calls it already runs: until LeaseTTL after the loss it admits a call
// only in place of one of its own that ended (at most its share), since the
// others may hold more than theirs and nothing says how much; then its
// share. A heartbeat probes Redis every min(LeaseTTL/3, 1s); when it
// answers, Shared re-asserts a lease for each call still running
// (including those the fallback let in), releases those of calls that
// ended meanwhile, reports EventRedisRecovered and applies the shared
// limits again. Token budgets spent during the fallback are not carried
// over to the shared budget.
//
// # When Redis loses its state
//
// Each limit's state carries an epoch (ratelab:{KEY}:epoch). When Redis
// loses it (FLUSHALL, a restart without persistence), the first process to
// notice (at a slot request or a heartbeat) creates a new one; every process
// that finds an epoch it does not know, or comes back from a loss,
// re-asserts the leases of its running calls and quiets the limit
// (ratelab:{KEY}:quiet) for two heartbeats and a second, in which no slot is
// granted, so that every live process has re-asserted its calls before a
// count is trusted again. The processes together never exceed the limit.
package sharedlimit
