package provider_test

import (
	"context"
	"testing"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// TestClientCacheAgainstMock sends the same cached system prompt twice to
// the mock: the first call writes it and its Cost expects nothing cached,
// the second's Cost expects the written prefix read, and the mock reports
// exactly that read.
func TestClientCacheAgainstMock(t *testing.T) {
	cfg := fastConfig()
	c := mockClient(t, provider.Anthropic{}, mocktest.Start(t, cfg).URL)
	req := request(false)
	req.System, req.SystemCache = mock.Filler(2000), "5m"

	for i, want := range []struct{ cached, read, write int }{{0, 0, 2000}, {2000, 2000, 0}, {2000, 2000, 0}} {
		cost := c.Cost(req)
		if cost.CachedInputTokens != want.cached {
			t.Errorf("call %d: Cost.CachedInputTokens = %d, want %d", i, cost.CachedInputTokens, want.cached)
		}
		_, o := c.Do(context.Background(), req, 0)
		if o.Kind != strategies.Success {
			t.Fatalf("call %d: %v %v", i, o.Kind, o.Err)
		}
		if u := o.Usage; u.CacheReadInputTokens != want.read || u.CacheCreationInputTokens != want.write {
			t.Errorf("call %d: usage %+v, want read %d, write %d", i, u, want.read, want.write)
		}
		if got, wantTokens := cost.Tokens(), cost.InputTokens-want.cached+req.MaxTokens; got != wantTokens {
			t.Errorf("call %d: Cost.Tokens() = %d, want %d", i, got, wantTokens)
		}
	}
}
