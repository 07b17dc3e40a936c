package strategies

// adaptiveStrategies lists the adaptive strategies (aimd-delay, aimd,
// adaptive) for the conformance suite, with their default configurations.
// aimd-delay and adaptive close a gate on a throttle: the cooldown, and the
// retry-after gate (the suite's throttle, with nothing else of the key in
// flight, is one the window cannot answer). aimd and adaptive shrink their
// window below the permits out; their permits report the limit they were
// granted under (grantLimiter), which the accounting check holds them to.
func adaptiveStrategies() []conformanceCase {
	return []conformanceCase{
		{
			name: "aimd-delay",
			new:  func(opts ...Option) Strategy { return NewAIMDDelay(AIMDDelayConfig{}, opts...) },
			gate: true,
		},
		{
			name: "aimd",
			new:  func(opts ...Option) Strategy { return NewAIMD(AIMDConfig{}, opts...) },
		},
		{
			name: "adaptive",
			new:  func(opts ...Option) Strategy { return NewAdaptive(AdaptiveConfig{}, opts...) },
			gate: true,
		},
	}
}
