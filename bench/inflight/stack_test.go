package inflight

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/loadgen"
)

// stackEnv makes the test binary, run again, run one of stackCases with its
// goroutines' stacks limited to maxStack.
const stackEnv = "RATELAB_INFLIGHT_STACK"

// maxStack is what a goroutine of a run may grow its stack to: a worker
// with its call in flight, and the embedded mock's handler answering it.
const maxStack = 8 << 10

// stackCases are the paths a call takes: each provider's JSON answers and
// streams, and two models, whose calls loadgen routes by model.
var stackCases = map[string]string{
	"anthropic,json":          "items: 100\nrequest: {provider: anthropic, max_tokens: 20}",
	"anthropic,stream":        "items: 100\nrequest: {provider: anthropic, stream: true, max_tokens: 20}",
	"openai,json":             "items: 100\nrequest: {provider: openai, max_tokens: 20}",
	"openai,stream":           "items: 100\nrequest: {provider: openai, stream: true, max_tokens: 20}",
	"openai-responses,json":   "items: 100\nrequest: {provider: openai-responses, max_tokens: 20}",
	"openai-responses,stream": "items: 100\nrequest: {provider: openai-responses, stream: true, max_tokens: 20}",
	"anthropic,two models":    "items: [{count: 50, model: claude-haiku-4-5}, {count: 50, model: claude-sonnet-4-5, stream: true}]\nrequest: {provider: anthropic, max_tokens: 20}",
}

// stackScenario is the rest of a case's scenario: twice as many workers as
// the mock admits at once, so that every path a worker takes runs:
// successes, 429s and their retries.
const stackScenario = `
workers: 40
server:
  output: {length: max_tokens}
  latency: {per_token: 2ms}
  limits: {max_concurrent: 20, retry_after: 50ms}
strategies:
  - {name: unbounded, kind: unbounded, max_retries: -1}
`

// TestWorkerStack holds every goroutine of a run, each worker with its call
// in flight and each handler of the embedded mock, to an 8 KiB stack, on
// every path of stackCases. A worker's frames (engine, strategies.Do,
// provider.Client.Do, net/http, decode) once took 10–11 KiB, so every
// worker's stack grew to 16 KiB: a third of the memory per in-flight call
// (docs/performance.md). The child process starts every goroutine at the
// runtime's smallest stack (GODEBUG=adaptivestackstart=0) and limits stacks
// for the run (debug.SetMaxStack), but for its own: a deeper path ends it
// with "stack overflow" and the traceback of the goroutine that needed
// more, which this test prints.
func TestWorkerStack(t *testing.T) {
	if name := os.Getenv(stackEnv); name != "" {
		items, ok := stackCases[name]
		if !ok {
			t.Fatalf("%s=%q: no such case", stackEnv, name)
		}
		s, err := loadgen.Parse("stack.yaml", []byte(items+"\n"+stackScenario))
		if err != nil {
			t.Fatal(err)
		}
		// This goroutine sets the runs up and builds their reports, at
		// any depth: its stack grows to 256 KiB first, and stays so
		// (gcshrinkstackoff=1).
		growStack(256)
		// A first run fills what each process computes once, at any
		// depth (encoding/json's encoders of each type, the mock's
		// decoders); the second is held to maxStack.
		if _, err := loadgen.Run(context.Background(), s, loadgen.Options{}); err != nil {
			t.Fatal(err)
		}
		old := debug.SetMaxStack(maxStack)
		rep, err := loadgen.Run(context.Background(), s, loadgen.Options{})
		debug.SetMaxStack(old)
		if err != nil {
			t.Fatal(err)
		}
		if sum := rep.Results[0].Summary; sum.Completed != 100 || sum.Throttled == 0 {
			t.Fatalf("%d of 100 completed, %d throttled: every call must complete, after some 429s", sum.Completed, sum.Throttled)
		}
		return
	}
	// The limit is for the binary users run: under the race detector,
	// whose instrumentation deepens every frame, the child is a test
	// binary built without it.
	bin := os.Args[0]
	if raceEnabled {
		bin = filepath.Join(t.TempDir(), "inflight.test")
		if out, err := exec.Command("go", "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("building the test binary without -race: %v\n%s", err, out)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(stackCases)) {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(bin, "-test.run=^TestWorkerStack$", "-test.v")
			cmd.Env = append(os.Environ(), stackEnv+"="+name, "GODEBUG=adaptivestackstart=0,gcshrinkstackoff=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				if i := strings.Index(string(out), "goroutine stack exceeds"); i >= 0 {
					out = out[i:]
				}
				t.Fatalf("a run with stacks limited to %d bytes failed: %v\n%s", maxStack, err, out)
			}
		})
	}
}

// growStack grows the calling goroutine's stack by about n KiB.
//
//go:noinline
func growStack(n int) byte {
	var b [1024]byte
	if n > 0 {
		b[n%len(b)] = growStack(n - 1)
	}
	return b[0]
}
