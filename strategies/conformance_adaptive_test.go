package strategies

// adaptiveStrategies lists the adaptive strategies (aimd-delay, aimd,
// adaptive) for the conformance suite.
func adaptiveStrategies() []conformanceCase {
	return nil
}
