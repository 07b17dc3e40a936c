package batchrun

import (
	"cmp"
	"context"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/provider"
)

// APIOptions are `loadgen batch --via batch-api`'s own flags
// (docs/batch-api.md): the batch then goes through the provider's batch
// API (batch.API) instead of one call per item.
type APIOptions struct {
	// Resubmit lists the outcomes submitted again: expired, errored,
	// canceled (--resubmit).
	Resubmit []string
	// MaxRounds bounds an item's submissions (--max-rounds).
	MaxRounds int
	// BatchSize caps one provider batch's requests (--batch-size).
	BatchSize int
	// PollMin and PollMax bound the polling backoff (--poll).
	PollMin, PollMax time.Duration
	// State is the state file (--batch-state); empty is OUTPUT.batches.json.
	State string
	// OnEvent is told each batch created, adopted, refused or ended.
	OnEvent func(string)
}

// APIReport is how a batch through a batch API went.
type APIReport struct {
	batch.APISummary
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Target   string `json:"target"`
	State    string `json:"state_file"`
}

// RunAPI runs opt's batch through the provider's batch API, with
// opt.API's options: the same input, output, provider, model, target and
// key as Run; no strategy (the provider paces a batch). Its errors
// never contain the API key.
func RunAPI(ctx context.Context, opt Options) (rep APIReport, err error) {
	key := ""
	defer func() {
		if err != nil {
			err = provider.Redact(err, key)
		}
	}()
	ao := APIOptions{}
	if opt.API != nil {
		ao = *opt.API
	}
	switch {
	case opt.Strategy != "" || opt.Only != "" || len(opt.ProviderStrategies) > 0:
		return rep, usagef("--via batch-api: the provider paces a batch: --strategy, --provider-strategy and --only do not apply")
	case opt.Shared != (loadgen.Shared{}):
		return rep, usagef("--via batch-api: --shared-* flags do not apply")
	case opt.Stream:
		return rep, usagef("--via batch-api: a batch request cannot stream (--stream)")
	case opt.Schema != "":
		return rep, usagef("--via batch-api: --schema is not supported: a batch's answers cannot be asked again one by one")
	case opt.Queue != nil:
		return rep, usagef("--via batch-api: the items come from Input, not a queue (BatchOptions.Queue: loadgen batch work)")
	}
	s, err := scenarioOf(opt)
	if err != nil {
		return rep, err
	}
	p, model, systemCache, err := batchTarget(s, opt)
	if err != nil {
		return rep, err
	}
	rep.Provider, rep.Model = p.Name(), model
	a := &batch.API{
		Input: opt.Input, Output: opt.Output, Model: rep.Model, MaxTokens: maxTokens(s, opt), SystemCache: systemCache,
		RetryFailed: opt.RetryFailed, SkipInvalid: opt.SkipInvalid, Provider: p,
		State: ao.State, Resubmit: ao.Resubmit, MaxRounds: ao.MaxRounds, BatchSize: ao.BatchSize,
		PollMin: ao.PollMin, PollMax: ao.PollMax, OnStart: opt.OnStart, OnEvent: ao.OnEvent,
	}
	ep, err := openEndpoint(ctx, s, opt, p, 16)
	if err != nil {
		return rep, err
	}
	defer ep.close()
	key = ep.key
	a.BaseURL, a.HTTP, rep.Target = ep.baseURL, ep.http, ep.target
	a.APIKey = key
	rep.State = cmp.Or(ao.State, opt.Output+".batches.json")
	rep.APISummary, err = a.Run(ctx)
	return rep, err
}
