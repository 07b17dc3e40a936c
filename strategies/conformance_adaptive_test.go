package strategies

import "context"

// adaptiveStrategies lists the adaptive strategies (aimd-delay, aimd,
// adaptive) for the conformance suite, with their default configurations.
// aimd-delay and adaptive close a gate on a throttle: the cooldown, and the
// retry-after gate.
func adaptiveStrategies() []conformanceCase {
	return []conformanceCase{
		{
			name: "aimd-delay",
			new:  func(opts ...Option) Strategy { return NewAIMDDelay(AIMDDelayConfig{}, opts...) },
			gate: true,
		},
		{
			name: "aimd",
			new:  func(opts ...Option) Strategy { return shrinking{NewAIMD(AIMDConfig{}, opts...)} },
		},
		{
			name: "adaptive",
			new:  func(opts ...Option) Strategy { return shrinking{NewAdaptive(AdaptiveConfig{}, opts...)} },
			gate: true,
		},
	}
}

// shrinking adapts a strategy whose limit drops on a throttle to the suite's
// check that no attempt starts with more in flight than Stats.Limit. That
// check holds for a fixed limit; a window that shrinks below the permits
// already granted cannot take them back, and with retries inside the slot
// those permits go on making attempts until they are done. shrinking reports
// the limit as at least the permits in flight, so the suite checks what such
// a strategy does promise: attempts never outnumber the permits granted.
// The step tables of the laws check the rest of the promise: no permit is
// granted while the window is full (TestAdaptiveLaw, TestAIMDAdmission).
type shrinking struct{ s Strategy }

func (w shrinking) Acquire(ctx context.Context, c Cost) (Permit, error) { return w.s.Acquire(ctx, c) }

func (w shrinking) Stats() Stats {
	st := w.s.Stats()
	st.Limit = max(st.Limit, float64(st.InFlight))
	return st
}
