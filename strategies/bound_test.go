package strategies

import (
	"context"
	"testing"
	"time"
)

// TestStatsBound checks that a strategy whose state sits at its own
// configured bound says so in Stats.Bound, and one inside its bounds (or
// with the defaults, which set no window maximum) does not.
func TestStatsBound(t *testing.T) {
	ok := Outcome{Kind: Success, Status: 200, Latency: time.Millisecond}
	tests := []struct {
		name string
		s    Strategy
		want string
	}{
		{"adaptive at its max", NewAdaptive(AdaptiveConfig{Initial: 2, Max: 2}), "max: 2"},
		{"adaptive with the defaults", NewAdaptive(AdaptiveConfig{}), ""},
		{"adaptive at a min above 1", NewAdaptive(AdaptiveConfig{Initial: 3, Min: 3, Max: 10}), "min: 3"},
		{"aimd at its max", NewAIMD(AIMDConfig{Initial: 4, Max: 4}), "max: 4"},
		{"aimd with the defaults", NewAIMD(AIMDConfig{}), ""},
		{"aimd-delay at its min delay", NewAIMDDelay(AIMDDelayConfig{Initial: time.Millisecond, Min: 10 * time.Millisecond}), "min_delay: 10ms"},
		{"aimd-delay at its max delay", NewAIMDDelay(AIMDDelayConfig{Initial: time.Minute, Max: 30 * time.Second}), "max_delay: 30s"},
		{"aimd-delay with the defaults", NewAIMDDelay(AIMDDelayConfig{}), ""},
		{"semaphore", NewSemaphore(SemaphoreConfig{Max: 2}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d, isDelay := tt.s.(*AIMDDelay); isDelay {
				// No Acquire: the first dispatch would wait for nothing,
				// but a second would wait out the delay.
				if got := d.Stats().Bound; got != tt.want {
					t.Errorf("Stats().Bound = %q, want %q", got, tt.want)
				}
				return
			}
			p, err := tt.s.Acquire(context.Background(), Cost{Provider: "anthropic", Key: "k"})
			if err != nil {
				t.Fatal(err)
			}
			p.Done(ok)
			if got := tt.s.Stats().Bound; got != tt.want {
				t.Errorf("Stats().Bound = %q, want %q", got, tt.want)
			}
		})
	}
}
