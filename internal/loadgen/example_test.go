package loadgen_test

import (
	"fmt"

	"github.com/ratelab/ratelab/internal/loadgen"
)

// Parse reports every problem of a scenario with its file, line and key.
func ExampleParse() {
	_, err := loadgen.Parse("scenarios/x.yaml", []byte(`name: x
items: 200
server:
  limits: {max_concurent: 20}
strategies:
  - name: sem
    kind: semaphore
    n: 20
    max_retries: ten
`))
	fmt.Println(err)
	// Output:
	// scenarios/x.yaml:4: server.limits.max_concurent: unknown key "max_concurent" (did you mean max_concurrent?)
	// scenarios/x.yaml:9: strategies[0].max_retries: want an integer, got "ten"
}

// A parsed scenario has its defaults filled in, and its oracle derived from
// the embedded mock's configuration.
func ExampleParse_defaults() {
	s, err := loadgen.Parse("20.yaml", []byte(`items: 200
server:
  limits: {max_concurrent: 20, retry_after: 1s}
strategies:
  - {name: semaphore(20), kind: semaphore, n: 20, expect: {completed: 200, max_wall_over_oracle: 1.05}}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	st := s.Strategies[0]
	fmt.Println(s.Name, s.Request.Provider, s.Request.MaxTokens, st.Retries(), s.OracleSeconds())
	for _, e := range st.Expect {
		fmt.Println(e.Metric, e)
	}
	// Output:
	// 20 anthropic 100 2 5
	// completed = 200
	// wall_over_oracle <= 1.05
}
