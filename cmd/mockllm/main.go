// Command mockllm serves package mock's mock of the LLM provider APIs
// (Anthropic, OpenAI, Azure OpenAI, Gemini, Bedrock), enforcing the providers'
// rate limits. See `mockllm --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/buildinfo"
	"github.com/ratelab/ratelab/internal/gcheadroom"
	"github.com/ratelab/ratelab/internal/logformat"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/internal/redislog"
	"github.com/ratelab/ratelab/mock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go gcheadroom.Run(ctx)
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mockllm:", err)
		os.Exit(1)
	}
}

const usageHead = `Usage: mockllm [flags]
       mockllm profiles    list the provider profiles --profile takes

mockllm is a mock of the Anthropic Messages API (POST /v1/messages,
/v1/messages/count_tokens) and the OpenAI Chat Completions API
(POST /v1/chat/completions) that enforces per-key rate limits, paces output
tokens, and injects faults. It also serves GET /v1/models[/ID], an admin API
under /_admin/ (limits, latency, faults, stats, reset), /metrics, and the
probes GET /healthz (200 while the process serves) and GET /readyz (200 while
it accepts calls, 503 once shutting down).

Point an SDK at it: ANTHROPIC_BASE_URL=http://HOST:PORT,
OPENAI_BASE_URL=http://HOST:PORT/v1. The first line on stdout is
"listening on http://HOST:PORT". SIGINT or SIGTERM shuts it down gracefully:
in-flight responses finish (up to --shutdown-timeout), then it exits 0.

Flags override the environment, which overrides the config file.

Replicas: N mockllm processes behind a load balancer enforce one
limits.max_concurrent per API key between them when each is started with the
same --redis URL and --redis-prefix (the per-minute limits stay per
replica). A replica renews its slots every 0.5 s, so a crashed replica's
come back within 10 s; while Redis is unreachable, calls are answered
overloaded (529, or 503 for OpenAI). When Redis loses its data (FLUSHALL, a
restart without persistence) the replicas re-assert their running calls and
a key grants no slot for 2 s meanwhile (calls arriving then wait): the limit
holds. A key's first call waits those 2 s too while other replicas run.

Memory: unless GOGC is set, mockllm lets its heap grow by at least 16 MB
between collections (GOGC up to 400 while the heap is small, Go's default
100 once it passes 16 MB), for about a sixth less CPU a request. Set GOGC
(GOGC=100: Go's default) to choose otherwise.

Flags:
`

const usageTail = `
Config file (YAML, at most 4 MiB; strict: an unknown key or bad value is an
error naming its line and key, every problem of the file at once, in the
words of a scenario's server: block). Every key is optional; these are the
defaults, except where noted:

  seed: 0                      # seeds jitter, output lengths and faults
  api_keys: []                 # none = open (one shared set of limits)
  admin_token: ""              # protects /_admin/ when set (and /metrics, unless metrics_token is set)
  metrics_token: ""            # bearer token for /metrics; series name keys by fingerprint only
  strict: true                 # refuse what the real APIs refuse: no anthropic-version, temperature or
                               # top_p out of range, an Anthropic conversation not starting with a user turn
  models: known                # each API's SDK-defined models (else its 404); any; or [extra, names]
  max_header_bytes: 65536      # request line + headers; above, 431 in the API's error envelope
  decode_budget: 134217728     # body bytes read and decoded at once; above, requests wait (then 429)
  latency:
    ttft: 0s                   # fixed part of the time to first token
    ttft_per_input_token: 0s
    per_token: 5ms             # per output token
    jitter: 0                  # 0.1 = each request's latency x [0.9, 1.1]
  output:
    tokens: max_tokens         # or {fixed: 50}, {uniform: [20, 80]}, {lognormal: {mean: 300, sigma: 0.6}}
                               # or {histogram: FILE}; capped by max_tokens
    default_max_tokens: 0      # OpenAI requests without a max (0 = 256)
    text: ""                   # every response's text instead of the filler (e.g. JSON to validate)
    length: ""                 # natural (here, when ""): end_turn / stop below max_tokens; max_tokens: exact
    tool_use: 0                # probability of a tool call when tools are offered with tool choice auto
  limits:                      # per API key; 0 = unlimited
    max_concurrent: 0
    rpm: 0
    itpm: 0                    # input tokens per minute
    otpm: 0                    # output tokens per minute (reserved from max_tokens, settled at the end)
    tpm: 0                     # tokens per minute, charged max(max_tokens, input)
    retry_after: 0s            # fixed retry-after on 429; 0 = computed from the limit
    count_rejected: false      # rejected attempts use up rpm too
    burst: 0s                  # refill each per-minute bucket holds; 0 = one minute, 1s = rpm/60 at once
    retry_after_ms: false      # add retry-after-ms (the exact wait) to rate-limit 429s
    acceleration: {factor: 0, floor: 0}  # a ramp model: at most max(floor, factor x the minute
                               # before) requests a minute; factor 0 = off
  limits_by_model: {}          # per-model pools beside limits, e.g. {"claude-sonnet-*": {rpm: 50}}
  quota:                       # per API key, in total; 0 = unlimited. Spent: Anthropic 429 with
    requests: 0                # details.error_code enforced_spend_limit_reached, OpenAI 429
    input_tokens: 0            # insufficient_quota; no retry-after (PUT /_admin/quota changes it)
    output_tokens: 0
    usd: 0                     # a dollar spend cap, at prices
    should_retry: null         # true/false: send x-should-retry with quota errors; unset sends none
  prices: {}                   # USD per million tokens by model pattern, e.g. {"claude-sonnet-*":
                               # {input: 3, output: 15, cache_write: 3.75, cache_write_1h: 6, cache_read: 0.3}}
  cache:                       # prompt caching: Anthropic cache_control, OpenAI automatic
    off: false
    min_tokens: 0              # shortest prefix cached; 0 = 1024
    reads_count_itpm: false    # cache reads count toward itpm (older Anthropic models)
  profile: ""                  # start from a provider profile (mockllm profiles); keys here override it
  capacity:
    max_concurrent: 0          # over all keys; beyond it 529 (Anthropic) / 503 (OpenAI)
  faults:                      # rates in [0, 1], drawn per attempt
    error_500: 0
    overloaded: 0
    slow: {rate: 0, extra: 0s}
    reset: 0                   # connection closed before a response
    cut_stream: 0              # connection closed half-way through a response
    stream_error: 0            # event: error (overloaded) half-way through a stream
    malformed: 0               # the text cut to half its tokens (invalid JSON for a JSON text)
    script: []                 # e.g. [{attempts: 2, status: 529, retry_after: 1s}]: the first
                               # attempts of each request fail (X-Stainless-Retry-Count or
                               # per Idempotency-Key)
  schedule:                    # limit changes during a run, without resetting state
    - at: 30s
      limits: {max_concurrent: 10}

Token estimate: ceil(characters/4) per text, at least 1 per message.
`

// redisDialTimeout bounds the first contact with --redis.
const redisDialTimeout = 5 * time.Second

// dialRedis connects to the Redis at url and checks that it answers.
func dialRedis(ctx context.Context, url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis: want redis://HOST:PORT/DB, got %q: %v", redact.URL(url), strings.TrimPrefix(err.Error(), "redis: "))
	}
	client := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, redisDialTimeout)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("--redis: %s does not answer: %v", opts.Addr, err)
	}
	return client, nil
}

// run is the whole command: it parses args (and the MOCKLLM_ environment
// variables), serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "profiles" {
		if len(args) > 1 {
			return fmt.Errorf("profiles takes no arguments, got %q", args[1:])
		}
		return listProfiles(stdout)
	}
	fs := flag.NewFlagSet("mockllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configPath      = fs.String("config", "", "YAML config `file` (see below)")
		profile         = fs.String("profile", "", "start from the provider profile `NAME` (mockllm profiles lists them); the config file and flags override it")
		addr            = fs.String("addr", "127.0.0.1:8080", "listen `address`; 127.0.0.1:0 picks a free port")
		redisURL        = fs.String("redis", "", "share limits.max_concurrent with the replicas using this Redis `URL` (redis://HOST:PORT/DB)")
		redisPrefix     = fs.String("redis-prefix", "mockllm", "prefix of the Redis keys: replicas with the same prefix share their limits")
		shutdownTimeout = fs.Duration("shutdown-timeout", 30*time.Second, "how long in-flight responses may take to finish on shutdown")
		version         = fs.Bool("version", false, "print the version and VCS revision, and exit")
		logFormat       logformat.Format
		upstream        = fs.String("upstream", "", "be a transparent recording proxy in front of `URL` instead of the mock (needs --record); with --config, --profile or the limit flags it answers requests over those limits with the mock's 429s first (docs/calibrate.md)")
		recordPath      = fs.String("record", "", "with --upstream: write one line per attempt to `FILE`")
		mockFlags       = mock.AddFlags(fs) // every flag that sets a mock.Config field
	)
	fs.Var(&logFormat, "log-format", logformat.Usage)
	// flag reports a parse error itself on stderr; the returned error adds
	// the hint. --help prints everything, to stdout, and nothing to stderr.
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usageHead)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprint(stdout, envUsage(fs))
			fmt.Fprint(stdout, usageTail)
			return nil
		}
		return fmt.Errorf("%w; see mockllm --help", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; see mockllm --help", fs.Args())
	}
	if *version {
		fmt.Fprintln(stdout, buildinfo.String("mockllm"))
		return nil
	}
	if err := setFromEnv(fs, os.LookupEnv); err != nil {
		return err
	}
	if *recordPath != "" && *upstream == "" {
		return errors.New("--record records a proxy's traffic: give --upstream URL too")
	}

	cfg := mock.DefaultConfig()
	switch {
	case *configPath != "":
		var err error
		if cfg, err = mock.LoadConfigProfile(*configPath, *profile); err != nil {
			return err
		}
	case *profile != "":
		p, err := mock.LookupProfile(*profile)
		if err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		cfg, cfg.Profile = p.Config, p.Name
	}
	if cfg.Output.Length == "" {
		// Real clients treat max_tokens / length as an error: mockllm's
		// answers end naturally unless the file pins output.length.
		cfg.Output.Length = mock.LengthNatural
	}
	mockFlags.Apply(&cfg)
	logger := logFormat.Logger(stderr)
	cfg.Logger = logger
	if *redisURL != "" {
		redislog.Install(logger) // go-redis's own lines: one record per outage
		client, err := dialRedis(ctx, *redisURL)
		if err != nil {
			return err
		}
		defer client.Close()
		store := mock.NewRedisStore(client, *redisPrefix)
		defer store.Close()
		cfg.Store = store
	}
	if *upstream != "" { // upstream.go
		var limits *mock.Config
		if *configPath != "" || *profile != "" || *redisURL != "" || mockFlagsSet(fs) {
			limits = &cfg
		}
		return serveUpstream(ctx, *addr, *upstream, *recordPath, limits, *shutdownTimeout, stdout, logger)
	}
	srv, err := mock.New(cfg)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", *shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		logger.Warn("in-flight responses cut at the shutdown deadline", "err", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// listProfiles prints the provider profiles: name, provider, the limits
// they set, the date checked, then each one's source.
func listProfiles(w io.Writer) error {
	ps, err := mock.Profiles()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROVIDER\tMODELS\tRPM\tITPM\tOTPM\tTPM\tBURST\tCHECKED")
	// One line for the key's limits, one for each per-model pool (the
	// OpenAI profiles have only pools: OpenAI limits per model) and one
	// for each Azure deployment (Azure limits each deployment).
	num := func(n int) string {
		if n == 0 {
			return "-"
		}
		return strconv.Itoa(n)
	}
	line := func(name, provider, models string, l mock.Limits, checked string) {
		burst := "1m0s"
		if l.Burst > 0 {
			burst = l.Burst.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, provider, models,
			num(l.RPM), num(l.ITPM), num(l.OTPM), num(l.TPM), burst, checked)
	}
	for _, p := range ps {
		name, provider, checked := p.Name, p.Provider, p.Checked
		deployments := p.Config.Azure.Deployments
		if l := p.Config.Limits; l != (mock.Limits{}) || len(p.Config.LimitsByModel) == 0 && len(deployments) == 0 {
			line(name, provider, "all", l, checked)
			name, provider, checked = "", "", ""
		}
		for _, m := range slices.Sorted(maps.Keys(p.Config.LimitsByModel)) {
			line(name, provider, m, p.Config.LimitsByModel[m], checked)
			name, provider, checked = "", "", ""
		}
		for _, d := range slices.Sorted(maps.Keys(deployments)) {
			line(name, provider, "deployment "+d, deployments[d].Limits, checked)
			name, provider, checked = "", "", ""
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, p := range ps {
		fmt.Fprintf(w, "%s: %s\n  source: %s\n", p.Name, strings.Join(strings.Fields(p.Description), " "), p.Source)
	}
	return nil
}
