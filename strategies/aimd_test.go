package strategies

import (
	"math"
	"testing"
)

// aimdStep is one step of an aimdLaw table: dispatch attempts, or end the
// attempt with the given number (1 for the first dispatched) with an outcome;
// then check the window.
type aimdStep struct {
	dispatch   int    // attempts to dispatch
	end        uint64 // the attempt to end, if dispatch is 0
	kind       Kind
	wantWindow float64
}

func TestAIMDLaw(t *testing.T) {
	tests := []struct {
		name  string
		cfg   AIMDConfig
		steps []aimdStep
	}{
		{
			name: "+1/window per success while full, about +1 per round trip",
			steps: []aimdStep{
				{dispatch: 4, wantWindow: 4},
				{end: 1, kind: Success, wantWindow: 4.25},
				{dispatch: 1, wantWindow: 4.25},
				{end: 2, kind: Success, wantWindow: 4.25 + 1/4.25},
			},
		},
		{
			// Four calls sent together end together: each of the four
			// grows the window, although after the first none ends with
			// the window full; about +1 per round trip, not +1/4.
			name: "a synchronized wave grows the window by about one",
			steps: []aimdStep{
				{dispatch: 4, wantWindow: 4},
				{end: 1, kind: Success, wantWindow: 4.25},
				{end: 2, kind: Success, wantWindow: 4.25 + 1/4.25},
				{end: 3, kind: Success, wantWindow: 4.25 + 1/4.25 + 1/(4.25+1/4.25)},
				{end: 4, kind: Success, wantWindow: 4.25 + 1/4.25 + 1/(4.25+1/4.25) + 1/(4.25+1/4.25+1/(4.25+1/4.25))},
			},
		},
		{
			name: "a window that fills while the call is under way binds it",
			steps: []aimdStep{
				{dispatch: 3, wantWindow: 4},
				{dispatch: 1, wantWindow: 4},
				{end: 1, kind: Success, wantWindow: 4.25},
			},
		},
		{
			name: "a call sent after the window was last full does not grow it",
			steps: []aimdStep{
				{dispatch: 4, wantWindow: 4},
				{end: 1, kind: Success, wantWindow: 4.25},
				{end: 2, kind: Success, wantWindow: 4.25 + 1/4.25},
				{dispatch: 1, wantWindow: 4.25 + 1/4.25},
				{end: 5, kind: Success, wantWindow: 4.25 + 1/4.25},
			},
		},
		{
			name: "no growth while the window is not full",
			steps: []aimdStep{
				{dispatch: 3, wantWindow: 4},
				{end: 1, kind: Success, wantWindow: 4},
				{end: 2, kind: Success, wantWindow: 4},
			},
		},
		{
			name: "×0.9 once per round trip",
			cfg:  AIMDConfig{Initial: 10},
			steps: []aimdStep{
				{dispatch: 10, wantWindow: 10},
				{end: 1, kind: Throttled, wantWindow: 9},
				// Dispatched before the decrease: the same congestion event.
				{end: 2, kind: Throttled, wantWindow: 9},
				{end: 3, kind: Overloaded, wantWindow: 9},
				{dispatch: 1, wantWindow: 9},
				// Dispatched after it: a new event.
				{end: 11, kind: Throttled, wantWindow: 8.1},
			},
		},
		{
			name: "failures and cancellations teach nothing",
			steps: []aimdStep{
				{dispatch: 4, wantWindow: 4},
				{end: 1, kind: Failed, wantWindow: 4},
				{end: 2, kind: Canceled, wantWindow: 4},
			},
		},
		{
			name: "clamped to Min",
			cfg:  AIMDConfig{Initial: 2, Min: 2},
			steps: []aimdStep{
				{dispatch: 2, wantWindow: 2},
				{end: 1, kind: Throttled, wantWindow: 2},
			},
		},
		{
			name: "clamped to Max",
			cfg:  AIMDConfig{Initial: 2, Max: 2, Increase: 5},
			steps: []aimdStep{
				{dispatch: 2, wantWindow: 2},
				{end: 1, kind: Success, wantWindow: 2},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newAIMDLaw(tt.cfg)
			for i, s := range tt.steps {
				if s.dispatch > 0 {
					for range s.dispatch {
						l.dispatch()
					}
				} else {
					l.observe(s.end, Outcome{Kind: s.kind}, true)
				}
				if math.Abs(l.window-s.wantWindow) > 1e-9 {
					t.Errorf("step %d (%+v): window = %v, want %v", i, s, l.window, s.wantWindow)
				}
			}
		})
	}
}

// TestAIMDAdmission checks that AIMD grants no permit beyond floor(window),
// also after a decrease left more in flight than the new window.
func TestAIMDAdmission(t *testing.T) {
	l := newAIMDLaw(AIMDConfig{Initial: 10})
	for range 10 {
		l.dispatch()
	}
	l.observe(1, Outcome{Kind: Throttled}, true) // window 9, 9 in flight
	if got, want := l.capacity(), 9; got != want || l.inFlight < got {
		t.Fatalf("after a throttle: capacity %d with %d in flight, want %d and full", got, l.inFlight, want)
	}
	l.observe(2, Outcome{Kind: Throttled}, false) // a retry in the slot: still 9 in flight
	if got := l.inFlight; got != 9 {
		t.Errorf("after a retry in the slot: %d in flight, want 9", got)
	}
}
