// Package profiles holds the provider profiles, one YAML file each: the limits
// a provider documents for an account tier, with the page they come from and
// the date it was read.
//
// mockllm --profile NAME, `mockllm profiles` and a scenario's server:
// {profile: NAME} read them through package mock (mock.Profiles); they are
// data, not code.
package profiles

import "embed"

// FS holds every *.yaml file of this directory.
//
//go:embed *.yaml
var FS embed.FS
