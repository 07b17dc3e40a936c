package provider_test

// The client-side conformance table: the same checks, against the real
// mock, for every wire format provider.ByName knows. A new format is one
// package, one line in provider.formats and one entry here; a format missing
// from the table fails TestConformanceCoversEveryFormat.

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// conformance is what a format's provider must answer with, where formats
// differ.
var conformance = map[string]struct {
	overloaded   int  // the status of the provider's overload answer
	unauthorized int  // the status of a wrong key; 0 is 401
	noLimits     bool // the provider sends no rate-limit headers
	noRetryAfter bool // nor a retry delay anywhere (Bedrock)
	noReset      bool // the provider sends no rate-limit reset headers (Azure)
}{
	"anthropic":        {overloaded: 529},
	"openai":           {overloaded: 503},
	"openai-responses": {overloaded: 503},
	"azure-openai":     {overloaded: 503, noReset: true},
	// Bedrock: no rate-limit headers and no retry-after; AWS answers a
	// bad credential with 403.
	"bedrock": {overloaded: 503, unauthorized: 403, noLimits: true, noRetryAfter: true},
	// AI Studio answers a key it does not know with 400 INVALID_ARGUMENT
	// (API_KEY_INVALID); Google sends no rate-limit headers.
	"gemini":           {overloaded: 503, unauthorized: 400, noLimits: true},
	"vertex":           {overloaded: 503, noLimits: true},
	"vertex-anthropic": {overloaded: 529, noLimits: true},
}

func TestConformanceCoversEveryFormat(t *testing.T) {
	names := provider.Names()
	for _, n := range names {
		if _, ok := conformance[n]; !ok {
			t.Errorf("provider.ByName knows %q, which has no entry in the conformance table", n)
		}
	}
	for n := range conformance {
		if _, err := provider.ByName(n); err != nil {
			t.Errorf("the conformance table names %q, which provider.ByName does not know: %v", n, err)
		}
	}
	if len(names) < 3 {
		t.Errorf("provider.Names() = %q, want at least the three built-in formats", names)
	}
}

// conformanceClient is a Client of the format called name against srv.
func conformanceClient(t *testing.T, name string, srv *mocktest.Server) *provider.Client {
	t.Helper()
	p, err := provider.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL
	if strings.HasSuffix(p.DefaultBaseURL(), "/v1") {
		base = srv.V1()
	}
	return &provider.Client{Provider: p, BaseURL: base, APIKey: mockKey, HTTP: srv.Client}
}

func TestConformance(t *testing.T) {
	checks := []struct {
		name  string
		setup func(cfg *mock.Config)
		check func(t *testing.T, name string, resp provider.Response, o strategies.Outcome)
	}{
		{"success", func(cfg *mock.Config) { cfg.Limits.RPM = 600 }, func(t *testing.T, name string, resp provider.Response, o strategies.Outcome) {
			if o.Kind != strategies.Success || o.Status != 200 || o.Err != nil {
				t.Fatalf("outcome %+v, want a success", o)
			}
			if resp.Text == "" || resp.RequestID == "" || resp.StopReason == "" {
				t.Errorf("response %+v, want text, a request id and a stop reason", resp)
			}
			if resp.Usage.InputTokens <= 0 || resp.Usage.OutputTokens <= 0 {
				t.Errorf("usage %+v, want input and output tokens", resp.Usage)
			}
			if conformance[name].noLimits {
				if o.Limits != (strategies.Limits{}) {
					t.Errorf("limits %+v, want none: the provider sends no rate-limit headers", o.Limits)
				}
			} else if r := o.Limits.Requests; r.Limit != 600 || r.Remaining != 599 || r.Reset.IsZero() != conformance[name].noReset {
				t.Errorf("requests limit %+v, want 600 with 599 remaining and a reset (none from %s: %v)", r, name, conformance[name].noReset)
			}
		}},
		{"429 with retry-after", func(cfg *mock.Config) {
			cfg.Faults.Script = []mock.ScriptStep{{Attempts: 1, Status: 429, RetryAfter: 2 * time.Second}}
		}, func(t *testing.T, name string, _ provider.Response, o strategies.Outcome) {
			if conformance[name].noRetryAfter {
				if o.Kind != strategies.Throttled || o.Status != 429 || o.HasRetryAfter {
					t.Errorf("outcome %+v, want Throttled, 429, no retry-after (the provider sends none)", o)
				}
			} else if o.Kind != strategies.Throttled || o.Status != 429 || !o.HasRetryAfter || o.RetryAfter != 2*time.Second {
				t.Errorf("outcome %+v, want Throttled, 429, retry-after 2s", o)
			}
		}},
		{"overloaded", func(cfg *mock.Config) { cfg.Faults.Overloaded = 1 }, func(t *testing.T, name string, _ provider.Response, o strategies.Outcome) {
			if o.Kind != strategies.Overloaded || o.Status != conformance[name].overloaded {
				t.Errorf("outcome %+v, want Overloaded with %d", o, conformance[name].overloaded)
			}
		}},
		{"400 is not retried", func(cfg *mock.Config) {
			cfg.Faults.Script = []mock.ScriptStep{{Attempts: 1, Status: 400}}
		}, func(t *testing.T, name string, _ provider.Response, o strategies.Outcome) {
			if o.Kind != strategies.Failed || o.Status != 400 || o.Err == nil {
				t.Errorf("outcome %+v, want Failed, 400, with an error", o)
			}
			if o.ShouldRetry != nil && *o.ShouldRetry {
				t.Errorf("a 400 says x-should-retry: true")
			}
		}},
		{"unauthorized", func(cfg *mock.Config) { cfg.APIKeys = []string{"another-key"} }, func(t *testing.T, name string, _ provider.Response, o strategies.Outcome) {
			want := cmp.Or(conformance[name].unauthorized, 401)
			if o.Kind != strategies.Failed || o.Status != want || o.Err == nil || strings.Contains(o.Err.Error(), mockKey) {
				t.Errorf("outcome %+v, want Failed, %d, an error that does not hold the key", o, want)
			}
		}},
	}
	for name := range conformance {
		for _, c := range checks {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", name, c.name, stream), func(t *testing.T) {
					cfg := fastConfig()
					c.setup(&cfg)
					srv := mocktest.Start(t, cfg)
					resp, o := conformanceClient(t, name, srv).Do(context.Background(), request(stream), 0)
					c.check(t, name, resp, o)
					if stream && o.Kind == strategies.Success && resp.TTFT <= 0 {
						t.Errorf("a stream's TTFT is %v, want it measured", resp.TTFT)
					}
				})
			}
		}
	}
}
