package loadgen

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// promptRSSEnv makes the test binary a child of BenchmarkPromptRSS: it runs
// one scenario whose prompts have this many tokens, and exits.
const promptRSSEnv = "RATELAB_PROMPT_RSS_TOKENS"

const promptRSSItems = 10

// TestMain turns the test binary into BenchmarkPromptRSS's child when
// promptRSSEnv is set: it runs one scenario whose prompts have that many
// tokens, and exits without running any test.
func TestMain(m *testing.M) {
	if v := os.Getenv(promptRSSEnv); v != "" {
		if err := promptRSSChild(v); err != nil {
			fmt.Fprintln(os.Stderr, "prompt RSS child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func promptRSSChild(v string) error {
	tokens, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", promptRSSEnv, v, err)
	}
	s, err := Parse("rss.yaml", fmt.Appendf(nil, `name: rss
items: %d
request: {prompt_tokens: %d, max_tokens: 10}
strategies: [{name: all, kind: unbounded}]
`, promptRSSItems, tokens))
	if err != nil {
		return err
	}
	rep, err := Run(context.Background(), s, Options{Listen: ListenMemory})
	if err != nil {
		return err
	}
	if r := rep.Results[0]; r.Completed != promptRSSItems {
		return fmt.Errorf("completed %d of %d", r.Completed, promptRSSItems)
	}
	return nil
}

// BenchmarkPromptRSS runs a scenario of 10 concurrent calls with prompts of
// 1,000 to 190,000 tokens (the largest claude-haiku-4-5 takes with
// max_tokens 10, a 760 KB prompt) in a child process against the embedded
// mock, and reports the child's peak RSS. The bound scales with the input:
// a fixed 50 MB for the runtime, the mock and the test binary (20 MB
// measured), plus 6 copies of every prompt in flight (the filler, each
// request's JSON, the mock's read and decoded bodies, with room for the
// garbage collector; about 2.6 measured). A
// prompt_tokens past the context window no longer gets this far: it is a
// validation error (TestValidateLimits).
//
//	go test ./loadgen -run '^$' -bench PromptRSS -benchtime 1x
func BenchmarkPromptRSS(b *testing.B) {
	for _, tokens := range []int{1_000, 50_000, 190_000} {
		b.Run(fmt.Sprint(tokens), func(b *testing.B) {
			var peakMB float64
			for b.Loop() {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", promptRSSEnv, tokens))
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("child: %v\n%s", err, out)
				}
				ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				if !ok {
					b.Skip("no rusage on this platform")
				}
				peakMB = max(peakMB, float64(ru.Maxrss)/1024) // Linux reports kilobytes
			}
			promptMB := float64(4*tokens) / (1 << 20)
			bound := 50 + 6*promptRSSItems*promptMB
			b.ReportMetric(peakMB, "peak-MB")
			b.ReportMetric(bound, "bound-MB")
			if peakMB > bound {
				b.Errorf("peak RSS %.1f MB with %d prompts of %d tokens in flight, want at most %.1f MB", peakMB, promptRSSItems, tokens, bound)
			}
		})
	}
}
