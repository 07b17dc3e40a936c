package mock

import (
	"math/rand/v2"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// compose generates the documents an answer may carry, outside the
// server's lock: its draws come from the server's seed and the
// conversation (contentSeed), so the same conversation gets the same
// documents.
func (s *Server) compose(c *wire.Call) {
	cr := c.Content
	if cr == nil {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), cr.Seed))
	gen := func(cs *wire.Compiled) []byte {
		doc, err := cs.Schema.GenerateJSON(rng)
		if err != nil {
			return cs.Sample // a seed the generator could not serve: the compile-time document
		}
		return doc
	}
	if len(cr.Tools) > 0 && cr.Mode != wire.ToolsNone && (cr.Mode != wire.ToolsAuto || s.cfg.Output.ToolUse > 0) {
		if cr.Mode != wire.ToolsNamed {
			cr.ToolIdx = rng.IntN(len(cr.Tools))
		}
		for range cr.Choices {
			cr.ToolDocs = append(cr.ToolDocs, gen(cr.Tools[cr.ToolIdx].Schema))
			id := appendBase62([]byte(cr.IDPrefix), rng.Uint64(), 11)
			cr.IDs = append(cr.IDs, string(appendBase62(id, rng.Uint64(), 11)))
		}
	}
	if cr.Format != nil {
		for range cr.Choices {
			cr.Docs = append(cr.Docs, gen(cr.Format))
		}
	}
}

// outputLength draws an answer's length under the server's lock: the
// Output.Tokens distribution (natural below max_tokens when Output.Length
// says so), then, for a request with content fields, each choice's
// content. It returns the number of tokens the response is paced by and
// whether it ended at max_tokens.
func (s *Server) outputLength(c *wire.Call) (int, bool) {
	n := c.MaxTokens
	switch t := s.cfg.Output.Tokens; {
	case s.text != nil:
		n = min(n, len(s.text))
	case t.Kind == Fixed:
		n = min(n, t.Min)
	case t.Kind == Uniform:
		n = min(n, t.Min+s.rng.IntN(t.Max-t.Min+1))
	case t.Kind == LogNormal:
		n = min(n, drawLogNormal(s.rng, t.Mean, t.Sigma))
	case t.Kind == Histogram:
		n = min(n, t.Observed.draw(s.rng))
	case s.cfg.Output.Length == LengthNatural && n > 1:
		lo := (n + 1) / 2
		n = lo + s.rng.IntN(n-lo)
	}
	// The response stopped at max_tokens, not at the end of what it had
	// to say.
	capped := n == c.MaxTokens && (s.text == nil || n < len(s.text))
	cr := c.Content
	if cr == nil {
		return n, capped
	}
	useTool := cr.ToolDocs != nil && (cr.Mode != wire.ToolsAuto || s.chance(s.cfg.Output.ToolUse))
	cr.Ans = make([]wire.Choice, cr.Choices)
	longest := 0
	for k := range cr.Ans {
		ch := &cr.Ans[k]
		switch {
		case useTool:
			ch.Tool, ch.Doc = true, cr.ToolDocs[k]
			ch.Text = wire.TextTokens(string(ch.Doc))
		case cr.Format != nil:
			ch.Text = wire.TextTokens(string(cr.Docs[k]))
		default:
			ch.Text = s.choiceText(k, n)
		}
		ch.N = len(ch.Text)
		if !ch.Tool && cr.Format == nil {
			ch.N, ch.Capped = n, capped
			ch.StopAt(cr.Stops)
		} else if ch.N > c.MaxTokens {
			ch.N, ch.Capped = c.MaxTokens, true
		}
		if cr.Logprobs && !ch.Tool {
			ch.Raw = wire.RawTokens(ch.Text[:ch.N])
		}
		longest = max(longest, ch.N)
	}
	return longest, cr.Ans[0].Capped
}

// choiceText is choice k's text tokens for a plain answer of n tokens:
// Output.Text, or the filler, shifted by k words so choices differ.
func (s *Server) choiceText(k, n int) []string {
	if s.text != nil {
		return s.text
	}
	out := make([]string, n)
	for i := range out {
		out[i] = wire.FillerWords[wire.FillerIndex(i+7*k)]
	}
	return out
}
