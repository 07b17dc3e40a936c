package strategies

// coreStrategies lists the non-adaptive strategies for the conformance suite.
func coreStrategies() []conformanceCase {
	return []conformanceCase{
		{name: "unbounded", new: func(opts ...Option) Strategy { return NewUnbounded(opts...) }},
		{name: "semaphore", new: func(opts ...Option) Strategy { return NewSemaphore(SemaphoreConfig{Max: 4}, opts...) }},
		{name: "per-provider", new: func(opts ...Option) Strategy {
			return NewPerProvider(PerProviderConfig{Limits: map[string]int{"anthropic": 3, "openai": 5}}, opts...)
		}},
		{name: "token-bucket", new: func(opts ...Option) Strategy {
			return NewTokenBucket(TokenBucketConfig{RPM: 120, TPM: 6000}, opts...)
		}},
		{name: "token-bucket rpm only", new: func(opts ...Option) Strategy {
			return NewTokenBucket(TokenBucketConfig{RPM: 600, RequestBurst: 5}, opts...)
		}},
		{name: "token-first", new: func(opts ...Option) Strategy {
			return NewTokenFirst(TokenFirstConfig{TPM: 6000, MaxConcurrent: 4}, opts...)
		}},
		{name: "token-first tokens only", new: func(opts ...Option) Strategy {
			return NewTokenFirst(TokenFirstConfig{TPM: 3000, TokenBurst: 500}, opts...)
		}},
	}
}
