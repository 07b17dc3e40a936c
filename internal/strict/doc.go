// Package strict is ratelab's one decoder of configuration: it fills any
// yaml-tagged struct (mock.Config, a scenario, each strategies.*Config) from
// YAML, strictly.
//
// It reports every problem of a file at once as typed Errors naming the file,
// the line and the key's path (strategies[2].n), with one vocabulary of
// messages ("want an integer, got \"abc\"", "unknown key \"rmp\" (did you mean
// rpm?)").
//
// Decoding and validation share the Decoder: validation problems are
// recorded with Invalidf (or Place, for a Validate method that returns
// Errors with paths only) and get the line of the value they judge; a path
// gets at most one message, and a value that failed to decode is not judged
// again.
package strict

import "github.com/ratelab/ratelab/internal/fielderr"

// Error is one problem at one place of a file (see package fielderr).
type Error = fielderr.Error

// Errors is every problem of a file (see package fielderr).
type Errors = fielderr.Errors
