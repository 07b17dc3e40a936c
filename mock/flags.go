package mock

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// configFlags is the one list of command-line flags that set a Config
// field: mockllm and loadgen exec both register exactly these. Each entry
// names the field it sets through field, which returns a pointer into a
// Config; the pointer's type picks the flag's type.
var configFlags = []struct {
	name, usage string
	field       func(*Config) any
}{
	{"max-concurrent", "per-key concurrent requests (limits.max_concurrent; 0 = unlimited)", func(c *Config) any { return &c.Limits.MaxConcurrent }},
	{"rpm", "per-key requests per minute (limits.rpm)", func(c *Config) any { return &c.Limits.RPM }},
	{"itpm", "per-key input tokens per minute (limits.itpm)", func(c *Config) any { return &c.Limits.ITPM }},
	{"otpm", "per-key output tokens per minute (limits.otpm)", func(c *Config) any { return &c.Limits.OTPM }},
	{"tpm", "per-key tokens per minute, OpenAI style (limits.tpm)", func(c *Config) any { return &c.Limits.TPM }},
	{"per-token-latency", "latency per output token (latency.per_token; default 5ms)", func(c *Config) any { return &c.Latency.PerToken }},
	{"ttft", "fixed time to first token (latency.ttft)", func(c *Config) any { return &c.Latency.TTFT }},
	{"retry-after", "retry-after sent with 429s (limits.retry_after; 0 = computed from the limit)", func(c *Config) any { return &c.Limits.RetryAfter }},
	{"api-key", "accepted API `key` (api_keys; repeatable; none = open)", func(c *Config) any { return &c.APIKeys }},
	{"admin-token", "token required by /_admin/, and by /metrics unless --metrics-token is set (admin_token)", func(c *Config) any { return &c.AdminToken }},
	{"metrics-token", "bearer token required by /metrics (metrics_token; the admin token works too)", func(c *Config) any { return &c.MetricsToken }},
	{"seed", "seed of jitter, output lengths and faults (seed)", func(c *Config) any { return &c.Seed }},
	{"max-header-bytes", "largest request line and headers; larger requests get 431 (max_header_bytes; 0 = 64 KiB)", func(c *Config) any { return &c.MaxHeaderBytes }},
	{"decode-budget", "request body `bytes` decoded at once over all requests; beyond, requests wait, then get 429 (decode_budget; 0 = 128 MiB)", func(c *Config) any { return &c.DecodeBudget }},
}

// Flags are the command-line flags that override a Config, shared by
// mockllm and loadgen exec so that both take the same names:
// --max-concurrent, --rpm, --itpm, --otpm, --tpm, --per-token-latency,
// --ttft, --retry-after, --api-key (repeatable), --admin-token,
// --metrics-token, --seed, --max-header-bytes and --decode-budget. Register
// them with AddFlags, parse, then Apply them over the Config from a file or
// defaults: only the flags set (on the command line, or by fs.Set) override
// it.
type Flags struct {
	fs *flag.FlagSet
	v  Config // the flags' values
}

// AddFlags registers the Config flags on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs}
	for _, cf := range configFlags {
		switch p := cf.field(&f.v).(type) {
		case *int:
			fs.IntVar(p, cf.name, 0, cf.usage)
		case *int64:
			fs.Int64Var(p, cf.name, 0, cf.usage)
		case *time.Duration:
			fs.DurationVar(p, cf.name, 0, cf.usage)
		case *string:
			fs.StringVar(p, cf.name, "", cf.usage)
		case *[]string:
			fs.Var((*keyList)(p), cf.name, cf.usage)
		default:
			panic(fmt.Sprintf("mock: flag --%s: field of type %T", cf.name, p))
		}
	}
	return f
}

// Apply sets on cfg the values of the flags that were set.
func (f *Flags) Apply(cfg *Config) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, cf := range configFlags {
		if !set[cf.name] {
			continue
		}
		switch src := cf.field(&f.v).(type) {
		case *int:
			*cf.field(cfg).(*int) = *src
		case *int64:
			*cf.field(cfg).(*int64) = *src
		case *time.Duration:
			*cf.field(cfg).(*time.Duration) = *src
		case *string:
			*cf.field(cfg).(*string) = *src
		case *[]string:
			*cf.field(cfg).(*[]string) = append([]string(nil), *src...)
		}
	}
}

// keyList is a repeatable string flag.
type keyList []string

func (l *keyList) String() string     { return strings.Join(*l, ",") }
func (l *keyList) Set(v string) error { *l = append(*l, v); return nil }
