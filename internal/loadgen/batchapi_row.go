package loadgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ratelab/ratelab/batch"
	"github.com/ratelab/ratelab/clock"
	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/provider"
)

// KindBatchAPI is a row that sends the scenario's items through the
// provider's batch API (batch.API, as `loadgen batch --via batch-api`
// does) instead of one call each, against the same embedded mock: beside
// fan-out rows, it shows what the batch API costs in wall time, dollars and
// 429s (docs/batch-api.md).
const KindBatchAPI = "batch-api"

// BatchAPIConfig is a batch-api row's configuration.
type BatchAPIConfig struct {
	// BatchSize caps the requests of one provider batch; 0 is the API's
	// maximum (100,000 Anthropic, 50,000 OpenAI).
	BatchSize int `yaml:"batch_size"`
	// Resubmit lists the outcomes submitted again: expired, errored,
	// canceled.
	Resubmit []string `yaml:"resubmit"`
	// Poll and PollMax bound the polling backoff (0: 1 min and 10 min).
	Poll    time.Duration `yaml:"poll"`
	PollMax time.Duration `yaml:"poll_max"`
}

func checkBatchAPIConfig(c *BatchAPIConfig, p *problems) {
	if c.BatchSize < 0 {
		p.bad("batch_size", "must not be negative, got %d", c.BatchSize)
	}
	for i, o := range c.Resubmit {
		if !slices.Contains([]string{"expired", "errored", "canceled"}, o) {
			p.bad(fmt.Sprintf("resubmit[%d]", i), "want expired, errored or canceled, got %q", o)
		}
	}
	if c.Poll < 0 || c.PollMax < 0 || c.PollMax > 0 && c.PollMax < c.Poll {
		p.bad("poll", "want 0 < poll <= poll_max, got %v and %v", c.Poll, c.PollMax)
	}
}

// runBatchAPIRow runs a batch-api row: in simulated time under
// opt.Virtual, as every other row.
func runBatchAPIRow(ctx context.Context, s *Scenario, st *Row, opt Options) (res reports.Result, err error) {
	res = reports.Result{Name: st.Name, Kind: st.Kind, Params: st.Params()}
	res.Items = s.Items.Count()
	if !opt.Virtual {
		return res, batchAPIRow(ctx, s, st, opt, nil, &res)
	}
	sim := clock.NewSim(SimEpoch)
	sim.Shuffle(uint64(s.Seed))
	simErr := sim.Run(ctx, func() { err = batchAPIRow(ctx, s, st, opt, sim, &res) })
	if err == nil && simErr != nil {
		err = fmt.Errorf("simulated run: %w", simErr)
	}
	return res, err
}

func batchAPIRow(ctx context.Context, s *Scenario, st *Row, opt Options, sim clock.Clock, res *reports.Result) error {
	c, ok := st.Config.(*BatchAPIConfig)
	if !ok {
		return fmt.Errorf("loadgen: row %q is not a batch-api row", st.Name)
	}
	groups := s.Groups()
	if len(groups) != 1 {
		return fmt.Errorf("loadgen: row %q: a batch-api row runs one group of items (one provider and model), the scenario has %d", st.Name, len(groups))
	}
	g := groups[0]
	p, err := provider.ByName(g.Provider)
	if err != nil {
		return err
	}
	tg, err := startTarget(s, opt, 16, sim)
	if err != nil {
		return err
	}
	defer tg.close()
	dir, err := os.MkdirTemp("", "ratelab-batch-api-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "items.jsonl")
	if err := writeFile(in, s.WriteItems); err != nil {
		return fmt.Errorf("items file: %w", err)
	}
	a := &batch.API{
		Input: in, Output: filepath.Join(dir, "results.jsonl"), Model: g.Model, MaxTokens: g.MaxTokens,
		Provider: p, BaseURL: ProviderBase(p.Name(), tg.baseURL), APIKey: firstAPIKey(&s.Server), HTTP: tg.http, Clock: sim,
		Resubmit: c.Resubmit, BatchSize: c.BatchSize, PollMin: cmpDur(c.Poll, time.Minute), PollMax: cmpDur(c.PollMax, 10*time.Minute),
	}
	sum, err := a.Run(ctx)
	res.Completed, res.Failed = sum.Completed, sum.Failed
	for _, n := range sum.Outcomes {
		res.Attempts += int64(n) // the batch requests submitted
	}
	if res.Completed > 0 {
		res.AttemptsPerCall = float64(res.Attempts) / float64(res.Completed)
	}
	res.Throttled = int64(sum.Refused) // creations refused for the queue limits
	res.InputTokens, res.OutputTokens = sum.Run.InputTokens, sum.Run.OutputTokens
	res.WallSeconds = sum.Run.WallSeconds
	if tg.srv != nil {
		res.CostUSD = tg.srv.BatchStats().USD
	}
	return err
}

func cmpDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// syncCostUSD is what a fan-out row's tokens cost at the mock's
// synchronous prices for the scenario's model (0 without prices).
func (s *Scenario) syncCostUSD(r *reports.Result) float64 {
	groups := s.Groups()
	if len(groups) != 1 {
		return 0
	}
	pr := s.Server.PriceOf(groups[0].Model)
	return (float64(r.InputTokens)*pr.Input + float64(r.OutputTokens)*pr.Output) / 1e6
}
