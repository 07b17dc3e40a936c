package strategies

// coreStrategies lists the non-adaptive strategies for the conformance suite.
func coreStrategies() []conformanceCase {
	return []conformanceCase{
		{name: "unbounded", new: func(opts ...Option) Strategy { return NewUnbounded(opts...) }},
		{name: "semaphore", new: func(opts ...Option) Strategy { return NewSemaphore(SemaphoreConfig{Max: 4}, opts...) }},
	}
}
