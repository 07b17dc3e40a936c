package reports

// Command is how a command row's program ran (loadgen's kind: command): the
// row's other figures come from the embedded mock's call accounting.
type Command struct {
	Argv []string `json:"argv"`
	Dir  string   `json:"dir,omitempty"`
	// Status says how it ended: "exited 0", "exited 3", "timed out after
	// 5m0s (process group stopped)", "interrupted (process group stopped)",
	// "killed by signal: killed".
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"` // -1 when a signal ended it
	TimedOut bool   `json:"timed_out,omitempty"`
	// Seconds is the program's run time, start to exit; the row's
	// wall_seconds is the server's, first request to last response.
	Seconds float64 `json:"seconds"`
	// Stdout and Stderr are the files its output went to, when kept.
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// StdoutTail and StderrTail are their last lines, kept when the
	// program did not exit 0.
	StdoutTail []string `json:"stdout_tail,omitempty"`
	StderrTail []string `json:"stderr_tail,omitempty"`
}
