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
	sys, _ := g.systemSize()
	if g.lines != nil {
		return g.lines.meanInputTokens(sys)
	}
	n := g.PromptTokens // a filler of exactly that many tokens, not built here
	if n == 0 {
		n = max(1, mock.EstimateTokens(g.promptText(0)))
	}
	return n + sys
}

// systemSize is the group's system prompt's tokens, as the mock counts them,
// and its bytes, escaped at worst, without building a filler of
// SystemTokens (four bytes a token); 0, 0 for none.
func (g ItemGroup) systemSize() (tokens, bytes int) {
	switch {
	case g.SystemTokens > 0:
		return g.SystemTokens, 4 * g.SystemTokens
	case g.System != "":
		return max(1, mock.EstimateTokens(g.System)), 6 * len(g.System)
	}
	return 0, 0
}

// systemText is the group's system prompt: SystemTokens of filler, or System.
func (g ItemGroup) systemText() string {
	if g.SystemTokens > 0 {
		return mock.Filler(g.SystemTokens)
	}
	return g.System
}

// promptText returns item i's prompt: PromptTokens of filler, or Prompt with
// "{i}" replaced.
func (g ItemGroup) promptText(i int) string {
	if g.PromptTokens > 0 {
		return mock.Filler(g.PromptTokens)
	}
	return strings.ReplaceAll(g.Prompt, "{i}", strconv.Itoa(i))
}
