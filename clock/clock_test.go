package clock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestRealWait checks Real's Wait in virtual time: each way out of a wait
// at its exact instant.
func TestRealWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Real
		t0 := c.Now()
		e := c.NewEvent()
		c.AfterFunc(3*time.Second, e.Fire)
		if fired, err := c.Wait(t.Context(), e, time.Second); fired || err != nil {
			t.Errorf("Wait before the event, 1s timeout = %v, %v; want false, nil", fired, err)
		}
		if fired, err := c.Wait(t.Context(), e, 0); !fired || err != nil {
			t.Errorf("Wait for the event = %v, %v; want true, nil", fired, err)
		}
		if got := Since(c, t0); got != 3*time.Second {
			t.Errorf("event fired after %v, want 3s", got)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if fired, _ := c.Wait(ctx, e, time.Second); !fired {
			t.Error("a fired event must win over an ended ctx")
		}
		if err := c.Sleep(ctx, time.Hour); err != context.Canceled {
			t.Errorf("Sleep with an ended ctx = %v, want context.Canceled", err)
		}
		if got := Since(c, t0); got != 3*time.Second {
			t.Errorf("Sleep with an ended ctx took %v", got-3*time.Second)
		}
		stop := c.AfterFunc(time.Second, func() { t.Error("stopped AfterFunc ran") })
		if !stop() {
			t.Error("stop of a pending AfterFunc = false")
		}
		if err := c.Sleep(t.Context(), 2*time.Second); err != nil {
			t.Errorf("Sleep = %v", err)
		}
		e.Fire() // a second Fire does nothing
	})
}

func TestOr(t *testing.T) {
	if Or(nil) != Real {
		t.Error("Or(nil) is not Real")
	}
}
