package strategies

import (
	"math"
	"time"
)

// Fleet lets the Adaptive strategies of several processes that call one
// provider with one API key discover and hold one limit together, instead
// of each probing to the whole limit (see AdaptiveConfig.Fleet). Package
// sharedlimit implements it on Redis (sharedlimit.Fleet).
//
// Adaptive calls it with its own lock held, on every admission and every
// outcome: its methods must not block (answer from what was last heard and
// do the I/O in the background) and must not call back into the strategy.
// A key is the Cost.Provider and Cost.Key of the calls.
type Fleet interface {
	// Share publishes learned, when it is above 0, as the fleet's limit for
	// the key (the calls the server holds at once across every process;
	// the last published wins), and returns the fleet's limit as last
	// heard (0 while unknown) and how many processes share it (at least 1).
	Share(provider, key string, learned int) (limit, peers int)
	// Probe asks for the key's probe token, which one process of the fleet
	// at a time holds for hold, and reports whether this process holds it
	// now. Only its holder sends a call above its share.
	Probe(provider, key string, hold time.Duration) bool
}

// fleetState is what adaptiveLaw knows of its fleet; the zero value (no
// Fleet) changes nothing in the law.
type fleetState struct {
	on      bool // the strategy has a Fleet
	limit   int  // the fleet's limit; 0 while unknown
	peers   int  // the processes sharing it
	share   int  // this process's share of limit; 0 while unknown
	token   bool // this process holds the probe token
	publish int  // a fleet limit learned here, to publish; 0 if none
}

// fleetEstimate returns the fleet limit that the server holding held of
// this process's calls implies: the others' shares plus held, or, before
// a fleet limit is known, held for each peer.
func (l *adaptiveLaw) fleetEstimate(held int) int {
	if l.fleet.limit > 0 && l.fleet.share > 0 {
		return max(1, l.fleet.limit-l.fleet.share+held)
	}
	return max(1, held*max(1, l.fleet.peers))
}

// fleetSync applies what the fleet last said at now: the key's window is
// capped at its share of the fleet's limit (limit/peers, at least 1), which
// becomes the law's learned limit, and token says whether this process may
// probe above it.
func (l *adaptiveLaw) fleetSync(now time.Time, limit, peers int, token bool) {
	l.fleet.on = true
	l.fleet.token = token
	l.fleet.peers = max(1, peers)
	if limit <= 0 {
		return
	}
	l.fleet.limit = limit
	share := min(max(int(math.Floor(float64(limit)/float64(l.fleet.peers))), 1, l.cfg.Min), l.cfg.Max)
	l.fleet.share = share
	if l.limit == share {
		return
	}
	l.limit = share
	if l.slowStart {
		l.slowStart = false
		l.probeAt = now.Add(l.hold())
	}
	l.window = min(l.window, float64(share))
	l.note(now, "fleet")
}

// probeAllowed reports whether a probe above the learned limit may go: always
// without a fleet, only with the probe token with one.
func (l *adaptiveLaw) probeAllowed() bool { return !l.fleet.on || l.fleet.token }

// syncFleetLocked exchanges key k's learned limit with the fleet, if the
// strategy has one.
func (a *Adaptive) syncFleetLocked(now time.Time, k limitKey, ak *adaptiveKey) {
	f := a.cfg.Fleet
	if f == nil {
		return
	}
	l := &ak.law
	pub := l.fleet.publish
	l.fleet.publish = 0
	limit, peers := f.Share(k.provider, k.key, pub)
	token := false
	if l.limit > 0 && !now.Before(l.probeAt) {
		token = f.Probe(k.provider, k.key, l.hold())
	}
	l.fleetSync(now, limit, peers, token)
}
