// Package admission decides whether a model request may start, and settles
// it when it ends. It knows no wire format and no HTTP: the mock's core
// (package mock) calls it and words its answers in each format's envelope.
//
// It holds token buckets and concurrency per API key, per-model pools, the
// organization's pool, long-context limits, the acceleration ramp, spend
// quotas and prices, the prompt cache, the limits' schedule, and
// concurrency slots shared between replicas in Redis (RedisStore).
//
// A Key is one API key's state (or one instance of a pool); its methods
// take the time, so admission is a pure function of the instants it is
// given, and the caller serializes calls. The calls a request makes:
//
//   - Key.Sync and Key.Snapshot: the buckets in force and what the
//     rate-limit headers report.
//   - Key.Exhausted: a spent Quota refuses the request first.
//   - Key.CacheLookup, then Key.CacheCommit once admitted: the prompt
//     cache's reads and writes.
//   - Key.Admit with its Levels (pool, organization, long context): the
//     Verdict; every level must admit, and none is charged unless all do.
//   - Key.Release on each level: the slot is freed and the output-token
//     reservation settled to the tokens produced.
//
// The configuration types (Limits, Capacity, Cache, Quota, Price, …) are
// defined here and aliased by package mock, so the server schema names
// them as before; docs/mockllm.md documents each key.
//
// Files: config.go the configuration types and their validation;
// bucket.go the token bucket; limiter.go Key, Demand, Verdict, Snapshot;
// pools.go per-model pools and Levels; accel.go the acceleration ramp;
// quota.go spend quotas and prices; cache.go the prompt cache; store.go
// RedisStore.
package admission
