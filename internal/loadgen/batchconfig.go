package loadgen

import (
	"context"
	"net/http"

	"github.com/ratelab/ratelab/engine"
	"github.com/ratelab/ratelab/internal/record"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// This file is what internal/batchrun builds `loadgen batch` from: a
// batch's config in the scenario vocabulary, its strategy row opened as a
// scenario's is, and the embedded mock.

// LoadBatchConfig reads a batch's --config file: a scenario file in the same
// vocabulary (request, target, server, workers, seed, strategies), parsed as
// strictly, in which items and strategies are optional. Items, when present,
// are not used (the batch's items are its input file), nor is expect.
func LoadBatchConfig(path string) (*Scenario, error) {
	data, err := strict.ReadFile(path)
	if err != nil {
		return nil, Errors{err.(*Error)}
	}
	return ParseBatchConfig(path, data)
}

// ParseBatchConfig parses data, named file in its errors, as a batch's
// config (LoadBatchConfig).
func ParseBatchConfig(file string, data []byte) (*Scenario, error) {
	return parse(&Scenario{File: file, batch: true}, data)
}

// Given reports whether the scenario's file sets key, a dotted path
// ("request.max_tokens", "workers"), rather than leaving its default.
func (s *Scenario) Given(key string) bool {
	_, set := s.lines[key]
	return set
}

// OpenStrategy builds the strategy row st describes, on the real clock, or
// connects to the Redis of its shared: block; close releases what it holds.
func OpenStrategy(ctx context.Context, st *Row) (s strategies.Strategy, close func(), err error) {
	return openStrategy(ctx, st, nil, nil)
}

// NewPolicy is the retry policy row st describes, seeded from seed unless
// the row sets its own.
func NewPolicy(st *Row, seed int64) *strategies.RetryPolicy { return newPolicy(st, seed) }

// ModelOf is the model a provider's items ask for when they name none.
func ModelOf(prov string) string { return defaultModels[prov] }

// KeyFingerprint is the fingerprint of c's API key, as adaptive's state is
// keyed (never the key).
func KeyFingerprint(c *provider.Client) string { return c.Cost(emptyRequest).Key }

// RecordClient returns hc recording every attempt in w (hc itself when w is
// nil), each line labelled run, in real time.
func RecordClient(hc *http.Client, w *record.Writer, run string) *http.Client {
	return recordClient(hc, w, run, nil)
}

// Mock is an embedded mock started for a batch (StartMock).
type Mock struct {
	BaseURL string       // the server's base URL, before ProviderBase
	HTTP    *http.Client // the client side, in process or over listen's listener
	Server  *mock.Server
	Close   func()
}

// StartMock starts the embedded mock of s's server block, seeded as a
// scenario's is, reached through listen's listener (nil: in process) with
// conns connections a host.
func StartMock(s *Scenario, listen ListenFunc, conns int) (*Mock, error) {
	ms := *s
	ms.Target = nil
	tg, err := startTarget(&ms, Options{Listen: listen}, conns, nil)
	if err != nil {
		return nil, err
	}
	return &Mock{BaseURL: tg.baseURL, HTTP: tg.http, Server: tg.srv, Close: tg.close}, nil
}

// ProgressLine reports a batch's progress while it runs (StartProgress).
type ProgressLine struct{ p *progress }

// StartProgress starts reporting to cfg the progress of total items run
// under s, labelled label: a live line on a terminal, else a plain line
// every cfg's period.
func StartProgress(cfg *Progress, label string, total int, s strategies.Strategy) ProgressLine {
	return ProgressLine{startProgress(cfg, label, total, s)}
}

// Attempt counts one attempt.
func (l ProgressLine) Attempt(a engine.Attempt) { l.p.attempt(a) }

// Result counts one item done.
func (l ProgressLine) Result(r engine.Result) { l.p.result(r) }

// Stop draws the last line and stops.
func (l ProgressLine) Stop() { l.p.stop() }
