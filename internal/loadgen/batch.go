package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/ratelab/ratelab/internal/record"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// LoadBatchConfig reads a batch's --config file: a scenario file in the same
// vocabulary (request, target, server, workers, seed, strategies), parsed as
// strictly, in which items and strategies are optional. Items, when present,
// are not used (the batch's items are its input file), nor is expect.
func LoadBatchConfig(path string) (*Scenario, error) {
	data, err := strict.ReadFile(path)
	if err != nil {
		return nil, Errors{err.(*Error)}
	}
	return parse(&Scenario{File: path, batch: true}, data)
}

// DefaultBatchWorkers is BatchOptions.Workers when neither the flag nor the
// config sets it: the items in progress at once (admitted, waiting in the
// strategy or between attempts), not the concurrency the strategy allows.
const DefaultBatchWorkers = 512

// DefaultBatchStrategy is the strategy of a batch that names none: adaptive
// finds an unpublished limit and, through its state file, remembers it.
const DefaultBatchStrategy = KindAdaptive

// BatchOptions configure RunBatch; they are `loadgen batch`'s flags.
type BatchOptions struct {
	// Record, when set, receives one line per HTTP attempt (record.go).
	Record *record.Writer
	// Input and Output are the JSONL files (see batch.Batch).
	Input, Output string
	// Config is the --config file (LoadBatchConfig), or nil.
	Config *Scenario
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
	Shared Shared
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
	// else DefaultBatchWorkers.
	Workers int
	// Grace is how long calls in progress may finish once ctx ends.
	Grace time.Duration
	// RetryFailed and SkipInvalid are batch.Batch's.
	RetryFailed, SkipInvalid bool
	// Progress, when not nil, reports the batch's progress while it runs.
	Progress *Progress
	// OnStart is called once the input is checked and the output read.
	OnStart func(batch.Summary)
	// OnOutage is called when the endpoint stops answering (the batch
	// pauses) and when it answers again (batch.Batch.OnOutage).
	OnOutage func(batch.Outage)
	// MaxOutage is batch.Batch.MaxOutage: how long to wait for an endpoint
	// that stopped answering before stopping.
	MaxOutage time.Duration
	// Listen starts the embedded mock's listener; nil serves it in
	// process (see Options.Listen).
	Listen ListenFunc
	// API holds --via batch-api's options (RunBatchAPI, batchapi.go).
	API *BatchAPIOptions
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

// BatchReport is how a batch went, with what it ran against.
type BatchReport struct {
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

// ErrBatchUsage is what RunBatch's configuration errors (flags, config,
// schema, key command) answer errors.Is for: the batch did not start.
var ErrBatchUsage = errors.New("loadgen: batch: usage error")

// batchError is a batch's configuration error: its message, and the
// sentinel it stands for.
type batchError struct {
	msg  string
	kind error // ErrBatchUsage or ErrNoKey
}

func (e *batchError) Error() string        { return e.msg }
func (e *batchError) Is(target error) bool { return target == e.kind }

func usagef(format string, args ...any) error {
	return &batchError{msg: "batch: " + fmt.Sprintf(format, args...), kind: ErrBatchUsage}
}

// RunBatch runs a batch: it builds the strategy, the client and the checks
// from opt, starts from the adaptive state file, runs batch.Batch and saves
// the state. Its errors never contain the API key; a configuration error
// wraps ErrBatchUsage, invalid input is an *batch.InputErrors.
func RunBatch(ctx context.Context, opt BatchOptions) (rep BatchReport, err error) {
	key := ""
	defer func() {
		if err != nil {
			err = provider.Redact(err, key)
		}
	}()
	s := opt.Config
	if s == nil {
		s = &Scenario{File: "(flags)", batch: true}
		if s, err = parse(s, []byte("{}")); err != nil {
			return rep, err
		}
	}
	st, err := batchStrategy(s, opt)
	if err != nil {
		return rep, err
	}
	rep.Strategy, rep.Kind = st.Name, st.Kind
	if st, err = withSharedFlags(st, opt.Shared); err != nil {
		return rep, err
	}
	if st.Shared != nil {
		rep.Shared, rep.SharedRedis = st.Shared.Key, redactURL(st.Shared.Redis)
	}
	if opt.MaxRetries != nil {
		st.MaxRetries = opt.MaxRetries
	}

	p, model, systemCache, err := batchTarget(s, opt)
	if err != nil {
		return rep, err
	}
	rep.Provider, rep.Model = p.Name(), model
	if systemCache != "" && p.Name() != "anthropic" {
		return rep, usagef("--system-cache %s", systemCacheProviderProblem(p.Name()))
	}
	maxTokens := opt.MaxTokens
	if _, set := s.lines["request.max_tokens"]; maxTokens == 0 && set {
		maxTokens = s.Request.MaxTokens
	}
	workers := opt.Workers
	if _, set := s.lines["workers"]; workers == 0 && set {
		workers = s.Workers
	}
	if workers <= 0 {
		workers = DefaultBatchWorkers
	}

	provStrategies, err := providerStrategies(opt.ProviderStrategies, p.Name())
	if err != nil {
		return rep, err
	}

	// Where the calls go, and with which key.
	ep, err := openBatchEndpoint(ctx, s, opt, p, workers)
	if err != nil {
		return rep, err
	}
	defer ep.close()
	key = ep.key
	client := &provider.Client{Provider: p, BaseURL: ep.baseURL, HTTP: ep.http}
	stateBase, base := ep.stateBase, ep.base
	rep.Target = ep.target
	var mockBase string // the embedded mock's base URL, when it runs
	if ep.mock != nil {
		mockBase = ep.mock.baseURL
		if opt.mockReady != nil {
			opt.mockReady(ep.mock.srv)
		}
	}
	client.APIKey = key
	transport := client.HTTP
	client.HTTP = recordClient(client.HTTP, opt.Record, "batch", nil)

	strategy, closeStrategy, err := openStrategy(ctx, st, nil, nil)
	if err != nil {
		return rep, usagef("%v", err)
	}
	defer closeStrategy()
	stateKey := strategies.StateKey{Provider: p.Name(), BaseURL: stateBase, KeyFingerprint: client.Cost(emptyRequest).Key}
	adaptive, _ := strategy.(*strategies.Adaptive)
	if adaptive != nil {
		rep.StateFile = st.stateFile()
		if rep.StateFile == "" {
			rep.StateFile = opt.StateFile
		}
	}
	if rep.StateFile != "" {
		if rep.StateLoaded, err = adaptive.LoadState(rep.StateFile, stateKey); err != nil {
			return rep, usagef("--state-file: %v", strings.TrimPrefix(err.Error(), "strategies: "))
		}
	}

	cfg := engine.Config{
		Client:     client,
		Strategy:   strategy,
		Retry:      newPolicy(st, s.Seed),
		Workers:    workers,
		Resolution: -1, // no timeline: a batch can run for days
		Grace:      opt.Grace,
		MaxInvalid: opt.MaxInvalid,
	}
	if opt.Schema != "" {
		if cfg.Check, err = SchemaCheck(opt.Schema); err != nil {
			return rep, err
		}
	}
	// The providers the input's lines name (metadata.provider), each with
	// its own client, key and strategy instance.
	var routes []*batchRoute
	defer func() {
		for _, r := range routes {
			r.close()
		}
	}()
	routeOf := func(name string) (*batch.Route, error) {
		rp, err := provider.ByName(name)
		if err != nil {
			return nil, err
		}
		rc := &provider.Client{Provider: rp, HTTP: recordClient(transport, opt.Record, "batch", nil)}
		rstBase := ""
		if opt.Mock {
			rc.BaseURL, rc.APIKey, rstBase = providerBase(name, mockBase), key, "embedded-mock"
		} else {
			rk := key
			if opt.APIKeyCommand == "" {
				getenv := opt.Getenv
				if getenv == nil {
					getenv = os.Getenv
				}
				rk = strings.TrimSpace(getenv(rp.KeyEnv()))
			}
			if rk == "" && base == "" {
				return nil, fmt.Errorf("no API key for %s: set %s, or give --api-key-command, or --base-url for a server that needs no key", name, rp.KeyEnv())
			}
			rc.APIKey = rk
			if base != "" {
				rc.BaseURL = providerBase(name, base)
			}
			rstBase = cmp.Or(rc.BaseURL, rp.DefaultBaseURL())
		}
		rst := st
		if spec, ok := provStrategies[name]; ok {
			rst = spec
		}
		if rst.Shared != nil {
			// Each provider's limit is its own: its shared key too.
			c, sh := *rst, *rst.Shared
			sh.Key += ":" + name
			c.Shared = &sh
			rst = &c
		}
		strategy, closeStrategy, err := openStrategy(ctx, rst, nil, nil)
		if err != nil {
			return nil, err
		}
		r := &batchRoute{name: name, strategy: strategy, close: closeStrategy,
			stateKey: strategies.StateKey{Provider: name, BaseURL: rstBase, KeyFingerprint: rc.Cost(emptyRequest).Key}}
		routes = append(routes, r)
		if r.adaptive, _ = strategy.(*strategies.Adaptive); r.adaptive != nil {
			if r.stateFile = cmp.Or(rst.stateFile(), opt.StateFile); r.stateFile != "" {
				if _, err := r.adaptive.LoadState(r.stateFile, r.stateKey); err != nil {
					return nil, fmt.Errorf("--state-file: %v", strings.TrimPrefix(err.Error(), "strategies: "))
				}
			}
		}
		return &batch.Route{Client: rc, Strategy: strategy, Model: defaultModels[name]}, nil
	}

	b := &batch.Batch{
		Provider:    p.Name(),
		Routes:      routeOf,
		Input:       opt.Input,
		Output:      opt.Output,
		Model:       rep.Model,
		MaxTokens:   maxTokens,
		Stream:      opt.Stream || s.Request.Stream,
		SystemCache: systemCache,
		RetryFailed: opt.RetryFailed,
		SkipInvalid: opt.SkipInvalid,
		MaxOutage:   opt.MaxOutage,
		OnOutage:    opt.OnOutage,
		Config:      cfg,
		Queue:       opt.Queue,
	}
	var prog *progress
	b.OnStart = func(sum batch.Summary) {
		if opt.OnStart != nil {
			opt.OnStart(sum)
		}
		if opt.Progress != nil {
			prog = startProgress(opt.Progress, st.Name, sum.Remaining, strategy)
		}
	}
	b.Config.OnAttempt = func(a engine.Attempt) {
		if prog != nil {
			prog.attempt(a)
		}
	}
	b.Config.OnResult = func(r engine.Result) {
		if prog != nil {
			prog.result(r)
		}
	}
	rep.Summary, err = b.Run(ctx)
	if prog != nil {
		prog.stop()
	}
	if rep.StateFile != "" && rep.Run.Attempts > 0 {
		if serr := adaptive.SaveState(rep.StateFile, stateKey); serr != nil && err == nil {
			err = fmt.Errorf("--state-file: %w", serr)
		}
	}
	for _, r := range routes {
		if r.stateFile != "" && r.strategy.Stats().Attempts > 0 {
			if serr := r.adaptive.SaveState(r.stateFile, r.stateKey); serr != nil && err == nil {
				err = fmt.Errorf("--state-file: %w", serr)
			}
		}
	}
	return rep, err
}

// batchRoute is the strategy of one provider an input's lines name, with
// where its adaptive state is kept.
type batchRoute struct {
	name      string
	strategy  strategies.Strategy
	close     func()
	adaptive  *strategies.Adaptive
	stateFile string
	stateKey  strategies.StateKey
}

// providerStrategies parses --provider-strategy's NAME=SPEC values: the
// strategy of the lines naming provider NAME in their metadata (by default
// an instance of the batch's own). def is the batch's provider, which
// --strategy names.
func providerStrategies(specs map[string]string, def string) (map[string]*Row, error) {
	rows := make(map[string]*Row, len(specs))
	for name, spec := range specs {
		if _, err := provider.ByName(name); err != nil {
			return nil, usagef("--provider-strategy %s=%s: unknown provider %q (want %s)", name, spec, name, strings.Join(provider.Names(), ", "))
		}
		if name == def {
			return nil, usagef("--provider-strategy %s=%s: %s is the batch's provider, whose strategy is --strategy", name, spec, name)
		}
		st, err := ParseStrategySpec(spec)
		if err != nil {
			return nil, usagef("--provider-strategy %s=%s: %s", name, spec, strings.TrimPrefix(err.Error(), "batch: "))
		}
		rows[name] = st
	}
	return rows, nil
}

// batchStrategy chooses the batch's strategy: --strategy, else the
// config's only one (or the one --only names), else DefaultBatchStrategy.
func batchStrategy(s *Scenario, opt BatchOptions) (*Row, error) {
	switch {
	case opt.Strategy != "":
		if opt.Only != "" {
			return nil, usagef("--strategy and --only: choose one")
		}
		return ParseStrategySpec(opt.Strategy)
	case opt.Only != "":
		i := slices.IndexFunc(s.Strategies, func(st Row) bool { return st.Name == opt.Only })
		if i < 0 {
			return nil, usagef("--only: %v", s.CheckOnly([]string{opt.Only}))
		}
		return &s.Strategies[i], nil
	case len(s.Strategies) == 1:
		return &s.Strategies[0], nil
	case len(s.Strategies) > 1:
		names := make([]string, len(s.Strategies))
		for i, st := range s.Strategies {
			names[i] = strconv.Quote(st.Name)
		}
		return nil, usagef("%s has %d strategies (%s): choose one with --only NAME", s.File, len(names), strings.Join(names, ", "))
	}
	return ParseStrategySpec(DefaultBatchStrategy)
}

// withSharedFlags returns st with the --shared-* flags applied over its
// shared: block (a copy when they change it), checked.
func withSharedFlags(st *Row, f Shared) (*Row, error) {
	if f == (Shared{}) {
		return st, nil
	}
	c := *st
	sh := Shared{}
	if st.Shared != nil {
		sh = *st.Shared
	}
	if f.Redis != "" {
		sh.Redis = f.Redis
	}
	if f.Key != "" {
		sh.Key = f.Key
	}
	if f.LeaseTTL != 0 {
		sh.LeaseTTL = f.LeaseTTL
	}
	if f.Peers != 0 {
		sh.Peers = f.Peers
	}
	if f.OpTimeout != 0 {
		sh.OpTimeout = f.OpTimeout
	}
	c.Shared = &sh
	if probs := sh.check(c.Kind); len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, p := range probs {
			flag := "--strategy"
			if p.key != "" {
				flag = "--shared-" + strings.ReplaceAll(p.key, "_", "-")
			}
			msgs[i] = flag + ": " + p.msg
		}
		return nil, usagef("%s", strings.Join(msgs, "; "))
	}
	return &c, nil
}

// ParseStrategySpec parses a strategy given on the command line, "KIND" or
// "KIND:KEY=VALUE,…", into a scenario Row named after it, checked as a
// scenario's strategy is. Re-queueing (requeue: true) is the default, as a
// batch wants: a slot is not held while an item waits out a retry-after.
func ParseStrategySpec(spec string) (*Row, error) {
	kind, params, _ := strings.Cut(spec, ":")
	var doc strings.Builder
	fmt.Fprintf(&doc, "strategies:\n  - name: %s\n    kind: %s\n", strconv.Quote(spec), strconv.Quote(strings.TrimSpace(kind)))
	requeue := false
	if params != "" {
		for kv := range strings.SplitSeq(params, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || strings.ContainsAny(k, ":#{}[]\"'\n") || strings.ContainsAny(v, "#{}[]\n") {
				return nil, usagef("--strategy %q: want KIND or KIND:KEY=VALUE,… (e.g. semaphore:n=20), got %q", spec, kv)
			}
			requeue = requeue || k == "requeue"
			fmt.Fprintf(&doc, "    %s: %s\n", k, v)
		}
	}
	if !requeue {
		doc.WriteString("    requeue: true\n")
	}
	s, err := parse(&Scenario{File: "--strategy", batch: true}, []byte(doc.String()))
	if err != nil {
		var errs Errors
		if errors.As(err, &errs) {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				key := strings.TrimPrefix(strings.TrimPrefix(e.Path, "strategies[0]"), ".")
				if key == "" || key == "name" {
					key = "kind"
				}
				msgs[i] = key + ": " + e.Message
			}
			return nil, usagef("--strategy %q: %s", spec, strings.Join(msgs, "; "))
		}
		return nil, usagef("--strategy %q: %v", spec, err)
	}
	return &s.Strategies[0], nil
}

// keyEnv names the environment variable the key is read from.
func keyEnv(s *Scenario, p provider.Provider) string {
	if s.Target != nil && s.Target.APIKeyEnv != "" {
		return s.Target.APIKeyEnv
	}
	return p.KeyEnv()
}

// batchKey reads the API key: from --api-key-command, else the environment.
func batchKey(ctx context.Context, opt BatchOptions, s *Scenario, p provider.Provider) (string, error) {
	if opt.APIKeyCommand != "" {
		return CommandKey(ctx, opt.APIKeyCommand)
	}
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return strings.TrimSpace(getenv(keyEnv(s, p))), nil
}

// batchEndpoint is where a batch's calls go, the same for loadgen batch and
// --via batch-api: the embedded mock (--target mock) or a base URL (--base-url,
// the scenario's target, else the provider's production URL), with the key
// and the HTTP client.
type batchEndpoint struct {
	baseURL   string // the client's base URL; "" for the provider's production URL
	http      *http.Client
	key       string
	target    string  // the report's Target: "embedded mock" or the URL, user information hidden
	stateBase string  // the base URL adaptive's state is kept under
	base      string  // --base-url or the scenario's target URL; "" for neither
	mock      *target // the embedded mock, nil against a base URL
	close     func()
}

// openBatchEndpoint starts the embedded mock or checks the base URL, reads
// the key, and makes a client with conns connections a host.
func openBatchEndpoint(ctx context.Context, s *Scenario, opt BatchOptions, p provider.Provider, conns int) (batchEndpoint, error) {
	if opt.Mock {
		if opt.BaseURL != "" {
			return batchEndpoint{}, usagef("--target mock and --base-url: choose one")
		}
		mockScenario := *s
		mockScenario.Target = nil
		tg, err := startTarget(&mockScenario, Options{Listen: opt.Listen}, conns, nil)
		if err != nil {
			return batchEndpoint{}, err
		}
		key := s.Request.APIKey
		if opt.APIKeyCommand != "" { // a mock configured with api_keys
			if key, err = CommandKey(ctx, opt.APIKeyCommand); err != nil {
				tg.close()
				return batchEndpoint{}, err
			}
		}
		return batchEndpoint{baseURL: providerBase(p.Name(), tg.baseURL), http: tg.http, key: key,
			target: "embedded mock", stateBase: "embedded-mock", mock: tg, close: tg.close}, nil
	}
	base := opt.BaseURL
	if base == "" && s.Target != nil {
		base = s.Target.URL
	}
	if base != "" && !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return batchEndpoint{}, usagef("--base-url: must start with http:// or https://, got %q", redactURL(base))
	}
	key, err := batchKey(ctx, opt, s, p)
	if err != nil {
		return batchEndpoint{}, err
	}
	if key == "" && base == "" {
		return batchEndpoint{}, &batchError{kind: ErrNoKey, msg: fmt.Sprintf("batch: no API key for %s: set %s, or give --api-key-command, or --base-url for a server that needs no key, or --target mock to try the embedded mock",
			p.Name(), keyEnv(s, p))}
	}
	ep := batchEndpoint{key: key, base: base}
	if base != "" {
		ep.baseURL = providerBase(p.Name(), base)
	}
	tr := provider.NewTransport(conns)
	ep.http, ep.close = &http.Client{Transport: tr}, tr.CloseIdleConnections
	ep.stateBase = cmp.Or(ep.baseURL, p.DefaultBaseURL())
	ep.target = redactURL(ep.stateBase)
	return ep, nil
}

// KeyCommandTimeout bounds --api-key-command.
const KeyCommandTimeout = 30 * time.Second

// CommandKey runs command with sh -c, as a secret manager's CLI is run
// (`vault kv get -field=key secret/llm`), and returns its stdout trimmed:
// one line, the key. Its errors never contain the key, nor the command's
// stdout; they quote the first line of its stderr.
func CommandKey(ctx context.Context, command string) (string, error) {
	timeout := KeyCommandTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, "sh", "-c", command)
	// A child of sh that keeps stdout open must not hold Run past the kill.
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	key := strings.TrimSpace(stdout.String())
	if err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		// Rounded as a person states a timeout: the caller's deadline is
		// already a few ms nearer than it was set by the time it is read.
		shown := timeout.Round(100 * time.Millisecond)
		if timeout >= 10*time.Second {
			shown = timeout.Round(time.Second)
		}
		return "", provider.Redact(usagef("--api-key-command did not finish within %v and was stopped; check that it does not wait for input", shown), key)
	}
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if msg != "" {
			msg = ": " + msg
		}
		return "", provider.Redact(usagef("--api-key-command: %v%s", err, msg), key)
	}
	switch {
	case key == "":
		return "", usagef("--api-key-command printed nothing on stdout; it must print the key")
	case strings.ContainsAny(key, "\r\n"):
		return "", usagef("--api-key-command printed more than one line; it must print the key alone")
	}
	return key, nil
}

// SchemaCheck compiles the JSON Schema at path and returns an engine check
// that parses a response's text as JSON (inside a ```json fence or not) and
// validates it, its error being the validator's message.
func SchemaCheck(path string) (func(engine.Item, provider.Response) error, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, usagef("--schema: %v", err)
	}
	sch, err := jsonschema.NewCompiler().Compile(abs)
	if err != nil {
		return nil, usagef("--schema %s: %v", path, err)
	}
	return func(_ engine.Item, resp provider.Response) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(unfence(resp.Text)))
		if err != nil {
			return fmt.Errorf("response is not JSON: %v", err)
		}
		if err := sch.Validate(v); err != nil {
			var ve *jsonschema.ValidationError
			if errors.As(err, &ve) {
				// Drop the schema's URL line, a local path: the causes are the message.
				msg := ve.Error()
				if _, rest, ok := strings.Cut(msg, "\n"); ok {
					msg = strings.TrimSpace(rest)
				}
				return fmt.Errorf("response does not match the schema: %s", strings.ReplaceAll(msg, "\n", "; "))
			}
			return err
		}
		return nil
	}, nil
}

// unfence returns text without a surrounding Markdown code fence, which
// models often put around JSON.
func unfence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return text
	}
	t = strings.TrimSuffix(t[3:], "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 && !strings.ContainsAny(t[:nl], "{[\"") {
		t = t[nl+1:] // the info string: json
	}
	return t
}

// batchTarget resolves a batch's provider, model and system-prompt cache
// from its flags (opt) over its config file (s), for both loadgen batch
// and --via batch-api: a flag wins, a model set in the file counts only
// for the file's provider, and otherwise the provider's default model.
func batchTarget(s *Scenario, opt BatchOptions) (p provider.Provider, model, systemCache string, err error) {
	prov := s.Request.Provider
	if opt.Provider != "" {
		prov = opt.Provider
	}
	if p, err = provider.ByName(prov); err != nil {
		return nil, "", "", usagef("--provider: unknown provider %q (want %s)", prov, strings.Join(provider.Names(), " or "))
	}
	model = opt.Model
	if model == "" {
		if _, set := s.lines["request.model"]; set && prov == s.Request.Provider {
			model = s.Request.Model
		} else {
			model = defaultModels[p.Name()]
		}
	}
	systemCache = opt.SystemCache
	if systemCache == "" {
		systemCache = s.Request.SystemCache
	}
	if msg := systemCacheTTLProblem(systemCache); msg != "" {
		return nil, "", "", usagef("--system-cache: %s", msg)
	}
	return p, model, systemCache, nil
}
