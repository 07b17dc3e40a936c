// Package fakeclient is a fake engine.Client for the engine's and the
// batch's tests: each call's outcome is decided from its prompt and the
// number of calls made for that prompt so far, as the providers classify
// a real answer.
package fakeclient

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/provider"
	"github.com/ratelab/ratelab/strategies"
)

// Client answers every call with "ok PROMPT" unless Fail says otherwise.
type Client struct {
	Calls atomic.Int64
	// Fail, when set, gives the status and error type of the n-th call
	// (from 0) for prompt; status 0 is a success. A status below 300 is an
	// error event in a stream that began with 200; error type
	// insufficient_quota is a spent quota, as provider's decode
	// classifies it.
	Fail func(prompt string, n int) (status int, typ string)
	// RetryAfter is sent with every 429 and 529.
	RetryAfter time.Duration

	mu   sync.Mutex
	seen map[string]int
}

// Seen returns how many calls were made for prompt.
func (c *Client) Seen(prompt string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[prompt]
}

// Do implements engine.Client.
func (c *Client) Do(ctx context.Context, r provider.Request, attempt int) (provider.Response, strategies.Outcome) {
	c.Calls.Add(1)
	prompt := r.Messages[len(r.Messages)-1].Content
	c.mu.Lock()
	if c.seen == nil {
		c.seen = make(map[string]int)
	}
	n := c.seen[prompt]
	c.seen[prompt]++
	c.mu.Unlock()
	if c.Fail != nil {
		if status, typ := c.Fail(prompt, n); status != 0 {
			o := strategies.Outcome{Kind: provider.KindOf(status), Status: status,
				Err: &provider.APIError{Status: status, Type: typ, Message: "no"}}
			if status < 300 {
				o.Kind = strategies.Failed
			}
			if typ == "insufficient_quota" {
				o.Kind = strategies.Quota
			}
			if o.Kind == strategies.Throttled || o.Kind == strategies.Overloaded {
				o.HasRetryAfter, o.RetryAfter = true, c.RetryAfter
			}
			return provider.Response{}, o
		}
	}
	return provider.Response{Text: "ok " + prompt, StopReason: "end_turn", Usage: strategies.Usage{InputTokens: 1, OutputTokens: 2}},
		strategies.Outcome{Kind: strategies.Success, Status: 200}
}
