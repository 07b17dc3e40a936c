package mock

import (
	"maps"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
)

// LimitsByModel returns the per-model pools in force (Config.LimitsByModel
// or the last SetLimitsByModel), a copy the caller may change.
func (s *Server) LimitsByModel() map[string]Limits {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.pools)
}

// SetLimitsByModel replaces the per-model pools at runtime, as SetLimits
// does the key's limits: each key's instance of a pool keeps its state (its
// requests in flight, its buckets' levels, capped by a lower limit), a
// pattern added starts full, and one removed no longer applies. It does not
// validate pools; Config.Validate does.
func (s *Server) SetLimitsByModel(pools map[string]Limits) {
	pools = maps.Clone(pools)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pools = pools
	s.calls.setPoolCaps(s.clock.Now(), pools) // the report card's caps (card.go)
}

// poolsPatch is the body of PUT /_admin/limits_by_model, decoded over the
// pools in force: a pattern's keys change only the keys sent, a new pattern
// is added, and a pattern set to null is removed.
type poolsPatch map[string]Limits

func (s *Server) poolsPatch() poolsPatch { return poolsPatch(s.LimitsByModel()) }

func (s *Server) setPoolsPatch(p poolsPatch) { s.SetLimitsByModel(p) }

// UnmarshalStrict decodes a mapping of patterns to limits over p.
func (p *poolsPatch) UnmarshalStrict(d *strict.Decoder, n *yaml.Node, path string) {
	if strict.IsNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.Errorf(n, path, "want a mapping of model patterns to limits, got %s", strict.DescribeNode(n))
		return
	}
	if *p == nil {
		*p = make(poolsPatch)
	}
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		kpath := fielderr.Join(path, kn.Value)
		switch {
		case kn.Kind != yaml.ScalarNode:
			d.Errorf(kn, path, "want a model pattern as key, got %s", strict.DescribeNode(kn))
			continue
		case seen[kn.Value]:
			d.Errorf(kn, kpath, "duplicate key")
			continue
		}
		seen[kn.Value] = true
		if strict.IsNull(vn) {
			delete(*p, kn.Value)
			continue
		}
		l := (*p)[kn.Value]
		d.Decode(vn, &l, kpath)
		(*p)[kn.Value] = l
	}
}
