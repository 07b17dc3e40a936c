package loadgen

import (
	"github.com/ratelab/ratelab/internal/strict"
)

// Error is one problem in a scenario file, from decoding or validation. Its
// message names the file, the line and the key's path, so that a user can
// go straight to what is wrong:
//
//	scenarios/x.yaml:12: strategies[2].max_retries: want an integer, got "ten"
//
// It is the error type of every ratelab configuration (internal/strict):
// mockllm --config and a scenario's server: block give the same message
// for the same mistake.
type Error = strict.Error

// Errors is every problem found in one scenario file, in the order of the
// file's lines.
type Errors = strict.Errors
