package loadgen

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// ServerConfig is the embedded mock's configuration: the scenario's server
// key, decoded strictly over mock.DefaultConfig with the mock's own schema.
type ServerConfig = mock.Config

func defaultServerConfig() ServerConfig { return mock.DefaultConfig() }

// firstAPIKey returns the first key the mock accepts, or "".
func firstAPIKey(c *ServerConfig) string {
	if len(c.APIKeys) == 0 {
		return ""
	}
	return c.APIKeys[0]
}

// callTime is the mock's time for one call without queueing or faults:
// ttft + ttft_per_input_token·input + max_tokens·per_token.
func callTime(c *ServerConfig, inputTokens, maxTokens int) time.Duration {
	out := outputTokens(c, maxTokens)
	l := c.Latency
	return l.TTFT + time.Duration(inputTokens)*l.TTFTPerInputToken + time.Duration(out)*l.PerToken
}

// outputTokens is the mock's (mean) output length for max_tokens.
func outputTokens(c *ServerConfig, maxTokens int) int {
	switch d := c.Output.Tokens; d.Kind {
	case mock.Fixed:
		return min(d.Min, maxTokens)
	case mock.Uniform:
		return min((d.Min+d.Max)/2, maxTokens)
	case mock.LogNormal, mock.Histogram:
		return int(math.Round(d.MeanTokens(maxTokens)))
	}
	return maxTokens
}

// estimatePromptTokens is the mock's count of a group's input tokens.
func estimatePromptTokens(g ItemGroup) int {
	if g.lines != nil {
		return g.lines.meanInputTokens(g.System)
	}
	n := g.PromptTokens // a filler of exactly that many tokens, not built here
	if n == 0 {
		n = max(1, mock.EstimateTokens(g.promptText(0)))
	}
	if g.System != "" {
		n += max(1, mock.EstimateTokens(g.System))
	}
	return n
}

// promptText returns item i's prompt: PromptTokens of filler, or Prompt with
// "{i}" replaced.
func (g ItemGroup) promptText(i int) string {
	if g.PromptTokens > 0 {
		return mock.Filler(g.PromptTokens)
	}
	return strings.ReplaceAll(g.Prompt, "{i}", strconv.Itoa(i))
}
