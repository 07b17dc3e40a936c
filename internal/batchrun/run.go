package batchrun

import (
	"context"
	"strings"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Options configure Run; they are `loadgen batch`'s flags.
type Options struct {
	// Record, when set, receives one line per HTTP attempt (loadgen.RecordClient).
	Record *record.Writer
	// Input and Output are the JSONL files (see batch.Batch).
	Input, Output string
	// Config is the --config file (loadgen.LoadBatchConfig), or nil.
	Config *loadgen.Scenario
	// Strategy, when set, is the strategy: "KIND" or "KIND:KEY=VALUE,…"
	// with the keys a scenario's strategy of that kind takes
	// ("semaphore:n=20", "token-bucket:rpm=50,tpm=40000"). It replaces the
	// config's strategies.
	Strategy string
	// Only names the config's strategy when it has several.
	Only string
	// Shared, when its Redis or Key is set, shares the strategy's limits
	// through Redis (--shared-redis, --shared-key, --shared-lease-ttl,
	// --shared-peers): its non-zero fields override the config strategy's
	// shared: block, or make one.
	Shared loadgen.Shared
	// Provider, Model and MaxTokens override the config's request.
	Provider, Model string
	MaxTokens       int
	// Stream requests streamed responses (or the config's request.stream).
	Stream bool
	// SystemCache asks Anthropic to cache the lines' system prompts: 5m or
	// 1h (or the config's request.system_cache); batch.Batch.SystemCache.
	SystemCache string
	// BaseURL is the provider's endpoint; empty means the config's target
	// URL, else the provider's production URL.
	BaseURL string
	// Mock runs against the embedded mock (the config's server block).
	Mock bool
	// APIKeyCommand, when set, is run with sh -c and its trimmed stdout is
	// the key; otherwise the key is read from the environment variable the
	// config's target.api_key_env names, else the provider's own
	// (ANTHROPIC_API_KEY, OPENAI_API_KEY).
	APIKeyCommand string
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
	// StateFile is the adaptive strategy's state file (unless the config's
	// strategy sets state_file); empty keeps no state.
	StateFile string
	// Schema is a JSON Schema file every response's text must satisfy.
	Schema string
	// MaxInvalid is how many times a response the schema rejects is asked
	// again.
	MaxInvalid int
	// MaxRetries, when not nil, overrides the strategy's max_retries.
	MaxRetries *int
	// Workers bounds the items in progress; 0 means the config's workers,
	// else DefaultWorkers.
	Workers int
	// Grace is how long calls in progress may finish once ctx ends.
	Grace time.Duration
	// RetryFailed and SkipInvalid are batch.Batch's.
	RetryFailed, SkipInvalid bool
	// Progress, when not nil, reports the batch's progress while it runs.
	Progress *loadgen.Progress
	// OnStart is called once the input is checked and the output read.
	OnStart func(batch.Summary)
	// OnOutage is called when the endpoint stops answering (the batch
	// pauses) and when it answers again (batch.Batch.OnOutage).
	OnOutage func(batch.Outage)
	// MaxOutage is batch.Batch.MaxOutage: how long to wait for an endpoint
	// that stopped answering before stopping.
	MaxOutage time.Duration
	// Listen starts the embedded mock's listener; nil serves it in
	// process (see loadgen.Options.Listen).
	Listen loadgen.ListenFunc
	// API holds --via batch-api's options (RunAPI, api.go).
	API *APIOptions
	// Queue, when set, supplies the items instead of Input (batch.Queue:
	// loadgen batch work).
	Queue batch.Queue
	// ProviderStrategies are --provider-strategy's: by provider, the
	// strategy spec ("KIND:KEY=VALUE,…") of the input lines naming that
	// provider in their metadata. A provider not listed gets an instance
	// of its own of the batch's strategy.
	ProviderStrategies map[string]string

	// mockReady, when set, is called with the embedded mock once it runs
	// (tests read its counts).
	mockReady func(*mock.Server)
}

// Report is how a batch went, with what it ran against.
type Report struct {
	batch.Summary
	Strategy string `json:"strategy"` // the strategy's name
	Kind     string `json:"kind"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Target   string `json:"target"` // the base URL (user information hidden), or "embedded mock"
	// StateFile is the adaptive state file used, if any; StateLoaded says
	// whether it had an entry for this provider, URL and key.
	StateFile   string `json:"state_file,omitempty"`
	StateLoaded bool   `json:"state_loaded,omitempty"`
	// Shared is the key of the limit shared through Redis, if any, and
	// SharedRedis that Redis (user information hidden).
	Shared      string `json:"shared,omitempty"`
	SharedRedis string `json:"shared_redis,omitempty"`
}

// Run runs a batch: it builds the strategy, the client and the checks from
// opt, starts from the adaptive state file, runs batch.Batch and saves the
// state. Its errors never contain the API key; a configuration error wraps
// ErrUsage, invalid input is an *batch.InputErrors.
func Run(ctx context.Context, opt Options) (rep Report, err error) {
	key := ""
	defer func() {
		if err != nil {
			err = provider.Redact(err, key)
		}
	}()
	s, err := scenarioOf(opt)
	if err != nil {
		return rep, err
	}
	st, err := chooseStrategy(s, opt, &rep)
	if err != nil {
		return rep, err
	}
	p, model, systemCache, err := batchTarget(s, opt)
	if err != nil {
		return rep, err
	}
	rep.Provider, rep.Model = p.Name(), model
	if systemCache != "" && p.Name() != "anthropic" {
		return rep, usagef("--system-cache %s", loadgen.SystemCacheProviderProblem(p.Name()))
	}
	workers := workers(s, opt)
	specs, err := providerStrategies(opt.ProviderStrategies, p.Name())
	if err != nil {
		return rep, err
	}

	ep, err := openEndpoint(ctx, s, opt, p, workers)
	if err != nil {
		return rep, err
	}
	defer ep.close()
	key, rep.Target = ep.key, ep.target
	if ep.mock != nil && opt.mockReady != nil {
		opt.mockReady(ep.mock.Server)
	}
	client := &provider.Client{Provider: p, BaseURL: ep.baseURL, APIKey: key,
		HTTP: loadgen.RecordClient(ep.http, opt.Record, "batch")}
	own, err := openOwn(ctx, st, opt, client, ep.stateBase, &rep)
	if err != nil {
		return rep, err
	}
	defer own.close()
	cfg, err := engineConfig(s, st, opt, client, own.strategy, workers)
	if err != nil {
		return rep, err
	}
	rs := &routes{ctx: ctx, opt: opt, st: st, specs: specs, transport: ep.http, ep: ep}
	defer rs.closeAll()

	b := &batch.Batch{
		Provider:    p.Name(),
		Routes:      rs.route,
		Input:       opt.Input,
		Output:      opt.Output,
		Model:       rep.Model,
		MaxTokens:   maxTokens(s, opt),
		Stream:      opt.Stream || s.Request.Stream,
		SystemCache: systemCache,
		RetryFailed: opt.RetryFailed,
		SkipInvalid: opt.SkipInvalid,
		MaxOutage:   opt.MaxOutage,
		OnOutage:    opt.OnOutage,
		Config:      cfg,
		Queue:       opt.Queue,
	}
	stopProgress := watch(b, opt, st.Name, own.strategy)
	rep.Summary, err = b.Run(ctx)
	stopProgress()
	if serr := own.saveState(rep.Run.Attempts); serr != nil && err == nil {
		err = serr
	}
	if serr := rs.save(); serr != nil && err == nil {
		err = serr
	}
	return rep, err
}

// openOwn opens the batch's own strategy, st, and, when it is adaptive,
// loads its state (st's state_file, else opt.StateFile) for the
// provider, endpoint and key fingerprint of client, named in rep.
func openOwn(ctx context.Context, st *loadgen.Row, opt Options, client *provider.Client, stateBase string, rep *Report) (*route, error) {
	strategy, closeStrategy, err := loadgen.OpenStrategy(ctx, st)
	if err != nil {
		return nil, usagef("%v", err)
	}
	r := &route{strategy: strategy, close: closeStrategy,
		stateKey: strategies.StateKey{Provider: client.Provider.Name(), BaseURL: stateBase, KeyFingerprint: loadgen.KeyFingerprint(client)}}
	if r.adaptive, _ = strategy.(*strategies.Adaptive); r.adaptive != nil {
		rep.StateFile = st.StateFile()
		if rep.StateFile == "" {
			rep.StateFile = opt.StateFile
		}
	}
	if r.stateFile = rep.StateFile; r.stateFile != "" {
		if rep.StateLoaded, err = r.adaptive.LoadState(r.stateFile, r.stateKey); err != nil {
			closeStrategy()
			return nil, usagef("--state-file: %v", strings.TrimPrefix(err.Error(), "strategies: "))
		}
	}
	return r, nil
}

// engineConfig is the engine's configuration of the batch's own calls:
// no timeline (a batch can run for days), and --schema's check.
func engineConfig(s *loadgen.Scenario, st *loadgen.Row, opt Options, client *provider.Client, strategy strategies.Strategy, workers int) (engine.Config, error) {
	cfg := engine.Config{
		Client:     client,
		Strategy:   strategy,
		Retry:      loadgen.NewPolicy(st, s.Seed),
		Workers:    workers,
		Resolution: -1, // no timeline: a batch can run for days
		Grace:      opt.Grace,
		MaxInvalid: opt.MaxInvalid,
	}
	if opt.Schema != "" {
		var err error
		if cfg.Check, err = SchemaCheck(opt.Schema); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// watch hands b's start to opt.OnStart and, with opt.Progress, reports
// the batch's progress from its start; the returned stop ends the report.
func watch(b *batch.Batch, opt Options, label string, strategy strategies.Strategy) (stop func()) {
	var prog *loadgen.ProgressLine
	b.OnStart = func(sum batch.Summary) {
		if opt.OnStart != nil {
			opt.OnStart(sum)
		}
		if opt.Progress != nil {
			p := loadgen.StartProgress(opt.Progress, label, sum.Remaining, strategy)
			prog = &p
		}
	}
	b.Config.OnAttempt = func(a engine.Attempt) {
		if prog != nil {
			prog.Attempt(a)
		}
	}
	b.Config.OnResult = func(r engine.Result) {
		if prog != nil {
			prog.Result(r)
		}
	}
	return func() {
		if prog != nil {
			prog.Stop()
		}
	}
}
