// Package sharedlimit owns ratelab's limits shared across processes and
// machines through Redis: a strategies.Strategy (Shared) whose concurrency
// slots, requests-per-minute and tokens-per-minute budgets and retry-after
// gate are held in one Redis server, so that every process calling a
// provider with one API key stays, together, within that key's limits.
//
// It is a package of its own so that the core strategies package imports no
// Redis client. The state lives under keys named after Config.Key (see
// keyspace in scripts.go); every decision is one Lua script, atomic and on
// Redis's own clock (TIME), so the processes' clocks need not agree.
//
// When Redis is lost mid-run, Shared warns (Config.Logger, and an
// EventRedisLost through Config.Observer) and falls back to a local share of
// each limit, never to an unbounded fan-out; when Redis answers again, it
// registers the calls admitted meanwhile and goes back to the shared limits.
package sharedlimit
