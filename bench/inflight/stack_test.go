package inflight

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/loadgen"
)

// stackEnv makes the test binary, run again, run stackScenario with its
// goroutines' stacks limited: "provider,json|stream,limit".
const stackEnv = "RATELAB_INFLIGHT_STACK"

// stackLimits is what a goroutine of a run may grow its stack to, by the
// path its calls take: a worker with its call in flight, and the embedded
// mock's handler answering it. An Anthropic call with a JSON answer (the
// path of bench/inflight.yaml and of the main job) fits in 8 KiB; the
// others' deepest frames (gjson reading a stream's events, OpenAI's
// nested fields) reach 7.1–7.2 KiB, just over what 8 KiB leaves them, and
// take 16 KiB.
var stackLimits = map[string]int{
	"anthropic,json":          8 << 10,
	"anthropic,stream":        16 << 10,
	"openai,json":             16 << 10,
	"openai,stream":           16 << 10,
	"openai-responses,json":   16 << 10,
	"openai-responses,stream": 16 << 10,
}

// stackScenario makes calls to provider (JSON or streams), with twice as
// many workers as the mock admits at once, so that every path a worker
// takes runs: successes, 429s and their retries.
const stackScenario = `
items: 100
workers: 40
request: {provider: %s, stream: %t, max_tokens: 20}
server:
  output: {length: max_tokens}
  latency: {per_token: 2ms}
  limits: {max_concurrent: 20, retry_after: 50ms}
strategies:
  - {name: unbounded, kind: unbounded, max_retries: -1}
`

// TestWorkerStack holds every goroutine of a run, each worker with its call
// in flight and each handler of the embedded mock, to a stack of
// stackLimits. A worker's frames (engine, strategies.Do, provider.Client.Do,
// net/http, decode) once took 10–11 KiB on every path, so every worker's
// stack grew to 16 KiB: a third of the memory per in-flight call (README:
// Performance). The child
// process starts every goroutine at the runtime's smallest stack
// (GODEBUG=adaptivestackstart=0) and limits stacks for the run
// (debug.SetMaxStack), but for its own: a deeper path ends it with "stack
// overflow" and the traceback of the goroutine that needed more, which this
// test prints.
func TestWorkerStack(t *testing.T) {
	if v := os.Getenv(stackEnv); v != "" {
		f := strings.Split(v, ",")
		limit, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatal(err)
		}
		s, err := loadgen.Parse("stack.yaml", fmt.Appendf(nil, stackScenario, f[0], f[1] == "stream"))
		if err != nil {
			t.Fatal(err)
		}
		// This goroutine sets the runs up and builds their reports, at
		// any depth: its stack grows to 256 KiB first, and stays so
		// (gcshrinkstackoff=1).
		growStack(256)
		// A first run fills what each process computes once, at any
		// depth (encoding/json's encoders of each type, the mock's
		// decoders); the second is held to limit.
		if _, err := loadgen.Run(context.Background(), s, loadgen.Options{}); err != nil {
			t.Fatal(err)
		}
		old := debug.SetMaxStack(limit)
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
	// The limits are for the binary users run: under the race detector,
	// whose instrumentation deepens every frame, the child is a test
	// binary built without it.
	bin := os.Args[0]
	if raceEnabled {
		bin = filepath.Join(t.TempDir(), "inflight.test")
		if out, err := exec.Command("go", "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("building the test binary without -race: %v\n%s", err, out)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(stackLimits)) {
		limit := stackLimits[path]
		t.Run(path, func(t *testing.T) {
			cmd := exec.Command(bin, "-test.run=^TestWorkerStack$", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", stackEnv, path, limit), "GODEBUG=adaptivestackstart=0,gcshrinkstackoff=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				if i := strings.Index(string(out), "goroutine stack exceeds"); i >= 0 {
					out = out[i:]
				}
				t.Fatalf("a run with stacks limited to %d bytes failed: %v\n%s", limit, err, out)
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
