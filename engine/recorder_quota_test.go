package engine

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

// TestRecorderCountsQuota checks that an attempt refused for a spent quota
// is counted as such, apart from the 429s of rate limiting and the other
// errors.
func TestRecorderCountsQuota(t *testing.T) {
	r := NewRecorder(strategies.NewSemaphore(strategies.SemaphoreConfig{Max: 1}), 0)
	r.start(time.Now())
	for _, o := range []strategies.Outcome{
		{Kind: strategies.Quota, Status: 429},
		{Kind: strategies.Quota, Status: 400},
		{Kind: strategies.Throttled, Status: 429},
		{Kind: strategies.Failed, Status: 400},
	} {
		r.attemptStarted()
		r.Attempt(Attempt{Outcome: o})
	}
	s := r.summary(time.Now())
	if s.Quota != 2 || s.Throttled != 1 || s.Errors != 1 || s.Attempts != 4 {
		t.Errorf("quota %d, throttled %d, errors %d, attempts %d; want 2, 1, 1, 4", s.Quota, s.Throttled, s.Errors, s.Attempts)
	}
}
