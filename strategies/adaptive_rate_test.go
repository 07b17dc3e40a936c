package strategies

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// rateServer is a token bucket that publishes nothing: it admits a call
// while it holds the call's input tokens, and refuses it with a 429 and
// retry-after 1 s otherwise.
type rateServer struct {
	mu            sync.Mutex
	rate, burst   float64 // input tokens a second, capacity
	tokens        float64
	last          time.Time
	blocked       time.Time // refuses everything until then
	admitted, got int
}

func (s *rateServer) admit(c Cost) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.last.IsZero() {
		s.tokens = min(s.burst, s.tokens+now.Sub(s.last).Seconds()*s.rate)
	}
	s.last = now
	s.got++
	if now.Before(s.blocked) || s.tokens < float64(c.InputTokens) {
		return false
	}
	s.tokens -= float64(c.InputTokens)
	s.admitted++
	return true
}

// runRated runs calls of cost c through a new Adaptive against s in a
// synctest bubble, so its wall time is virtual and exact: one worker a
// call, each admitted call taking 0.2 s and a refused one waiting its
// second before it tries again, worker i starting i µs late and i µs longer in both, so that no
// two events share an instant (at one instant the goroutines' order is the
// scheduler's, and it changed the outcome: 3 orders in 300 left the
// learner off, at 93.18 s). during, if not nil, runs beside them in the
// bubble. It returns the Adaptive and the time the last call ended.
func runRated(t *testing.T, s *rateServer, c Cost, calls int, during func(a *Adaptive)) (a *Adaptive, wall time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		a = NewAdaptive(AdaptiveConfig{})
		if during != nil {
			go during(a)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for i := range calls {
			skew := time.Duration(i) * time.Microsecond
			latency := 200*time.Millisecond + skew
			wg.Go(func() {
				time.Sleep(skew)
				for {
					p, err := a.Acquire(t.Context(), c)
					if err != nil {
						t.Error(err)
						return
					}
					if s.admit(c) {
						time.Sleep(latency)
						p.Done(Outcome{Kind: Success, Status: 200, Latency: latency,
							Usage: Usage{InputTokens: c.InputTokens, OutputTokens: c.MaxTokens}})
						return
					}
					p.Done(Outcome{Kind: Throttled, Status: 429, RetryAfter: time.Second, HasRetryAfter: true})
					time.Sleep(time.Second + skew)
				}
			})
		}
		wg.Wait()
		wall = time.Since(start)
	})
	return a, wall
}

// TestAdaptiveLearnsUnpublishedRate checks, in virtual time, that a key
// whose 429s publish no budget, refused by an input-token bucket of 1,000 a
// second (burst 1,000) that calls of 400 input tokens and 0.2 s cannot fill
// with one call in flight, is paced by the rate learned from its 429s: 200
// calls end within 2 % of the ideal 79.2 s (the burst, then 1,000 a second,
// then the last call's 0.2 s) with at most 5 % of the attempts refused. A
// window alone cannot pace it: it holds at least one call, 5 a second.
func TestAdaptiveLearnsUnpublishedRate(t *testing.T) {
	s := &rateServer{rate: 1000, burst: 1000, tokens: 1000}
	c := Cost{Provider: "anthropic", Key: "k", InputTokens: 400, MaxTokens: 40}
	a, wall := runRated(t, s, c, 200, nil)
	ideal := 79.2
	if s.admitted != 200 {
		t.Fatalf("admitted %d calls, want 200", s.admitted)
	}
	refused := s.got - s.admitted
	t.Logf("wall %.2f s (ideal %.2f), %d attempts, %d refused", wall.Seconds(), ideal, s.got, refused)
	if wall.Seconds() > ideal*1.02 {
		t.Errorf("wall %.2f s, want ≤ 1.02 × the ideal %.2f s", wall.Seconds(), ideal)
	}
	if float64(s.got) > 1.05*200 {
		t.Errorf("%d attempts for 200 calls (%d refused), want ≤ 1.05 per call", s.got, refused)
	}
	if !learnerOf(a).on {
		t.Error("the key's rate learner is off, want it pacing the calls")
	}
}

// learnerOf is the rate learner of a's key "k" of anthropic.
func learnerOf(a *Adaptive) rateLearner {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keyLocked(limitKey{"anthropic", "k"}).law.rate
}

// TestAdaptiveRateVeto checks that a key whose server, once it has refused
// a few calls, refuses everything for 10 s (a ramp rule, not a bucket: no
// refill admits a call) stops learning a rate: the learner, once it has
// paced a round trip and more with nothing admitted, turns itself off for
// good, and the window and the retry-after gate answer the refusals.
func TestAdaptiveRateVeto(t *testing.T) {
	s := &rateServer{rate: 1000, burst: 1000, tokens: 1000}
	c := Cost{Provider: "anthropic", Key: "k", InputTokens: 400, MaxTokens: 40}
	var before bool
	a, _ := runRated(t, s, c, 60, func(a *Adaptive) {
		time.Sleep(4 * time.Second)
		before = learnerOf(a).on
		s.mu.Lock()
		s.blocked = time.Now().Add(10 * time.Second)
		s.mu.Unlock()
	})
	if !before {
		t.Fatal("the rate learner was off before the block, want it pacing the bucket's calls")
	}
	if r := learnerOf(a); !r.veto || r.on {
		t.Errorf("rate learner on %v, veto %v after 10 s with nothing admitted; want off, vetoed", r.on, r.veto)
	}
}
