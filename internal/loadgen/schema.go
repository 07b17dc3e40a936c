package loadgen

import (
	"fmt"
	"io"
	"strings"
)

// schemaText is the scenario reference `loadgen help scenario` prints. The
// kinds and metrics lists are appended from Kinds and Metrics, so they cannot
// drift from what Parse accepts.
const schemaText = `Scenario files (YAML, decoded strictly: an unknown key, a duplicate key or a
value of the wrong type is an error naming FILE:LINE: KEY; every problem of a
file is reported at once, one message per key; at most 4 MiB).

Top level
  name          string    the scenario's name in reports (default: the file name)
  description   string    free text, shown in reports
  seed          int       seeds retry jitter and the mock's jitter and faults (default 1)
  items         int | {count, ...} | [{count, ...}, ...]
                          the batch: a count, one item group, or a list of groups run
                          in file order. A group's keys (all optional but count)
                          override request: count, provider, model, max_tokens,
                          prompt, prompt_tokens, system, system_tokens,
                          system_cache, stream, api_key.
                          file: FILE instead of count: your own items, in loadgen
                          batch's input format (relative to this file), one a line
                          with its own prompt or messages, system and max_tokens
  arrival       mapping   items arrive over time (an open loop, as an online
                          service's traffic) instead of all at the start (optional):
    rate          rate     mean arrivals, 10/s, 600/m, 36000/h or N (per second); required
    process       string   poisson (default: exponential gaps, seeded) or constant
    duration      duration instead of items: rate x duration items arrive
                          rows then report goodput (completed/s) and queueing
                          delay (arrival to first attempt): expect goodput,
                          queueing_delay_p50, _p99, _max
  request       mapping   the call every item makes:
    provider      anthropic | openai                      (default anthropic)
    model         string   (default claude-haiku-4-5; gpt-5.4-mini for openai)
    max_tokens    int      (default 100)
    prompt        string   the user message; {i} becomes the item index
                           (default "Classify ticket {i}.")
    prompt_tokens int      instead of prompt: filler text of this many tokens
    system        string   a system prompt (default none)
    system_tokens int      instead of system: filler text of this many tokens,
                           the same for every item (a long shared context)
    system_cache  5m | 1h  anthropic: cache the system prompt (cache_control
                           with this TTL); the client learns the cached part
                           from the responses and token budgets reserve the rest
    stream        bool     stream the response over SSE (default false)
    api_key       string   the key sent to the embedded mock, a test value
                           (default: the first of server.api_keys, else
                           ratelab-test-key). Real keys come from target.api_key_env.
  server        mapping   the embedded mock's configuration (mock.Config; see
                          mockllm --help): seed, api_keys, admin_token,
                          latency{ttft, ttft_per_input_token, per_token (default 5ms), jitter},
                          output{tokens: max_tokens | {fixed: N} | {uniform: [MIN, MAX]}
                          | {lognormal: {mean: TOKENS, sigma: S}} | {histogram: FILE}
                          (FILE: a token count a line, or a batch's results.jsonl)},
                          limits{max_concurrent, rpm, itpm, otpm, tpm, retry_after,
                          count_rejected}, capacity{max_concurrent},
                          faults{error_500, overloaded, slow{rate, extra}, reset,
                          cut_stream, stream_error, script}, schedule[{at, limits{...}}].
                          Every strategy runs against a fresh server.
  target        mapping   run against a live server instead (optional):
    url           string   base URL (http:// or https://); for openai, /v1 is
                           appended unless the URL ends in /v1
    provider      string   overrides every item's provider
    api_key_env   string   the environment variable holding the key; the key
                           is never printed, and is redacted from errors
  oracle        mapping   the ideal a run is measured against (optional):
    call_time     duration one call without queueing (default: from server.latency)
    limit         int      the concurrency limit per key (default:
                           server.limits.max_concurrent)
                          oracle seconds = max over keys of ceil(items/limit) x
                          call_time, and of the time the server's rpm/tpm/itpm/otpm
                          need beyond one full bucket
  workers       int       items in progress at once in the engine (default:
                          the item count, at most 2000)
  timeline      duration  timeline resolution (default 100ms)
  strategies    list      the rows, run in file order (at least one):
    name          string   unique label (required)
    kind          string   the strategy (required), see below
    max_retries   int      retries per item, as the SDKs' max_retries (default 2;
                           -1 retries until the item succeeds)
    requeue       bool     release the slot between attempts and re-queue the
                           item (default false: retry inside the held slot)
    seed          int      retry jitter seed (default: the scenario's seed)
    shared        mapping  hold the limits in Redis, shared by every process that
                           names the same key (kinds semaphore: n; token-first:
                           n, tpm, token_burst; token-bucket: rpm, tpm, bursts):
                           {redis: "redis://127.0.0.1:6379/0", key: team-a,
                           lease_ttl: 60s, peers: 4, op_timeout: 2s}
      redis         string   the server's URL (required)
      key           string   the shared limit's name (required; never the API key)
      lease_ttl     duration how long a crashed process's slots stay taken (60s;
                             set it above a call's p99 latency)
      peers         int      processes sharing the limit: each admits 1/peers of
                             it while Redis is lost (default: those last seen)
      op_timeout    duration bound on each Redis round trip (2s)
                           Redis unreachable at the start is an error; lost
                           mid-run, a warning and a local share until it is back
                           (events redis_lost, redis_recovered on the timeline)
    sweep         any numeric key of a row (max_retries, seed, the kind's
                           numbers and durations) may be {sweep: [V1, V2, ...]}
                           or {sweep: "LO..HI step S"} (step 1 when left out;
                           durations need one: "1s..5s step 500ms"): the row
                           becomes one row per value, each named NAME KEY=VALUE,
                           or NAME with {KEY} replaced when NAME holds {KEY};
                           several sweeps in a row give every combination (at
                           most 1000 rows). e.g. n: {sweep: "5..50 step 5"}
    expect        mapping  METRIC: VALUE, where VALUE is a number (exactly), a
                           range "LO..HI" (inclusive) or a comparison such as
                           "<= 1.05"; max_METRIC: N and min_METRIC: N are bounds
    ...           the kind's parameters (the yaml keys of its strategies.*Config):
      n             int       semaphore's size; token-first's concurrency
      limits        {provider: int}  per-provider limits; default: the limit of
                              providers not listed (0 unlimited)
      rpm, tpm      number    published requests / tokens per minute
      request_burst, token_burst  int  what may start at once after idling
      initial_delay, min_delay, max_delay, cooldown  duration  (aimd-delay:
                              6s, 10ms, 60s, 10s)
      successes     int       aimd-delay: successes before the delay shrinks (3)
      initial, min, max  int  aimd / adaptive window (4, 1, none)
      increase      float     aimd: window growth per round trip (1);
                              aimd-delay: delay factor on a throttle (1.8)
      decrease      float     factor on a throttle (aimd, adaptive) or after
                              the successes (aimd-delay) (0.9)
      probe_after   float     adaptive: round trips at the limit before probing (3)
      growth        float     adaptive: slow start's window growth per round trip (16)
      state_file    string    adaptive: where its learned limit is saved and
                              loaded, keyed by provider, URL and key fingerprint
      command       [string]  command: your program and its arguments (argv,
                              never a shell), run against a fresh mock
      dir           string    command: its directory, relative to this file
      env           {string: string}  command: variables added to its environment
      timeout       duration  command: then its process group is stopped (10m)
`

// WriteSchema writes the scenario reference: every key, its type and default,
// each strategy kind's parameters and the metrics expect can compare.
func WriteSchema(w io.Writer) error {
	var b strings.Builder
	b.WriteString(schemaText)
	b.WriteString("\nStrategy kinds and their parameters\n")
	for _, k := range kindNames() {
		params := strings.Join(Kinds[k], ", ")
		if params == "" {
			params = "(none)"
		}
		fmt.Fprintf(&b, "  %-13s %s\n", k, params)
	}
	b.WriteString("\nMetrics for expect (docs/scenarios.md#expect-keys)\n")
	for _, k := range metricNames() {
		m := Metrics[k]
		if where := m.By.String(); where != "" {
			fmt.Fprintf(&b, "  %-18s %s (%s)\n", k, m.Doc, where)
		} else {
			fmt.Fprintf(&b, "  %-18s %s\n", k, m.Doc)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
