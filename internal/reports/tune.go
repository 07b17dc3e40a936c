package reports

// Swept is one parameter a sweep set on a row (loadgen's sweeps: n:
// {sweep: "5..50 step 5"}), and its value there.
type Swept struct {
	Key    string  `json:"key"`    // the row's key: n, max_retries, decrease, …
	Value  string  `json:"value"`  // as the row's name shows it: 20, 0.5, 1.5s
	Number float64 `json:"number"` // as a number (a duration in seconds), for charts
}

// Tune is loadgen tune's recommendation over a report's rows: the best row
// by Objective among those that completed every item within the 429
// constraint, and the runner-up it beat. A chart of the sweep plots each
// row's wall_seconds against its throttled (and attempts), by its Sweep.
type Tune struct {
	// Objective is what was minimised: wall (wall_seconds), attempts, or
	// cost (input + output tokens billed).
	Objective string `json:"objective"`
	// Max429s is the constraint on throttled; -1 is none.
	Max429s int64 `json:"max_429s"`
	// Best names the chosen row, "" when no row qualified; Value is its
	// objective.
	Best  string  `json:"best,omitempty"`
	Value float64 `json:"value"`
	// Next names the runner-up, "" when no other row qualified; NextValue
	// is its objective, and Margin = NextValue - Value.
	Next      string  `json:"next,omitempty"`
	NextValue float64 `json:"next_value,omitempty"`
	Margin    float64 `json:"margin,omitempty"`
	// Excluded says why each row that did not qualify was left out, by
	// row name.
	Excluded map[string]string `json:"excluded,omitempty"`
}
