package mock

import (
	"flag"
	"strings"
	"time"
)

// Flags are the command-line flags that override a Config, shared by
// mockllm and loadgen exec so that both take the same names: --max-concurrent,
// --rpm, --itpm, --otpm, --tpm, --per-token-latency, --ttft, --retry-after,
// --api-key (repeatable), --admin-token and --seed. Register them with
// AddFlags, parse, then Apply them over the Config from a file or defaults:
// only the flags given on the command line override it.
type Flags struct {
	fs                         *flag.FlagSet
	maxConcurrent              int
	rpm, itpm, otpm, tpm       int
	perToken, ttft, retryAfter time.Duration
	adminToken                 string
	seed                       int64
	apiKeys                    keyList
}

// AddFlags registers the Config flags on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	fs.IntVar(&f.maxConcurrent, "max-concurrent", 0, "per-key concurrent requests (limits.max_concurrent; 0 = unlimited)")
	fs.IntVar(&f.rpm, "rpm", 0, "per-key requests per minute (limits.rpm)")
	fs.IntVar(&f.itpm, "itpm", 0, "per-key input tokens per minute (limits.itpm)")
	fs.IntVar(&f.otpm, "otpm", 0, "per-key output tokens per minute (limits.otpm)")
	fs.IntVar(&f.tpm, "tpm", 0, "per-key tokens per minute, OpenAI style (limits.tpm)")
	fs.DurationVar(&f.perToken, "per-token-latency", 0, "latency per output token (latency.per_token; default 5ms)")
	fs.DurationVar(&f.ttft, "ttft", 0, "fixed time to first token (latency.ttft)")
	fs.DurationVar(&f.retryAfter, "retry-after", 0, "retry-after sent with 429s (limits.retry_after; 0 = computed from the limit)")
	fs.StringVar(&f.adminToken, "admin-token", "", "token required by /_admin/ (admin_token)")
	fs.Int64Var(&f.seed, "seed", 0, "seed of jitter, output lengths and faults (seed)")
	fs.Var(&f.apiKeys, "api-key", "accepted API `key` (repeatable; none = open)")
	return f
}

// Apply sets on cfg the values of the flags the command line gave.
func (f *Flags) Apply(cfg *Config) {
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "max-concurrent":
			cfg.Limits.MaxConcurrent = f.maxConcurrent
		case "rpm":
			cfg.Limits.RPM = f.rpm
		case "itpm":
			cfg.Limits.ITPM = f.itpm
		case "otpm":
			cfg.Limits.OTPM = f.otpm
		case "tpm":
			cfg.Limits.TPM = f.tpm
		case "per-token-latency":
			cfg.Latency.PerToken = f.perToken
		case "ttft":
			cfg.Latency.TTFT = f.ttft
		case "retry-after":
			cfg.Limits.RetryAfter = f.retryAfter
		case "api-key":
			cfg.APIKeys = append([]string(nil), f.apiKeys...)
		case "admin-token":
			cfg.AdminToken = f.adminToken
		case "seed":
			cfg.Seed = f.seed
		}
	})
}

// keyList is a repeatable string flag.
type keyList []string

func (l *keyList) String() string     { return strings.Join(*l, ",") }
func (l *keyList) Set(v string) error { *l = append(*l, v); return nil }
