package loadgen

import (
	"slices"

	"github.com/ratelab/ratelab/internal/fielderr"
)

// CheckVirtual reports, as fielderr.Errors naming the file, line and key,
// what keeps the scenario's rows named by only (all rows when empty) from
// running in simulated time (Options.Virtual): a target (a real server
// answers in real time), a command row (a real program runs in real time)
// and a shared limit (Redis counts in real time).
func (s *Scenario) CheckVirtual(only []string) error {
	var errs fielderr.Errors
	bad := func(path, msg string) {
		errs = append(errs, &fielderr.Error{File: s.File, Line: s.line(path), Path: path, Message: msg})
	}
	if s.Target != nil {
		bad("target", "a simulated run (--virtual) runs against the embedded mock, not a real server; remove target: (the server: block configures the mock) or run without --virtual")
	}
	for i, st := range s.Strategies {
		if len(only) > 0 && !slices.Contains(only, st.Name) {
			continue
		}
		path := st.path
		if path == "" {
			path = fielderr.Index("strategies", i)
		}
		switch {
		case st.Kind == KindCommand:
			bad(fielderr.Join(path, "kind"), "a command row runs a real program, which cannot run in simulated time (--virtual); leave it out with --only or run without --virtual")
		case st.Shared != nil:
			bad(fielderr.Join(path, "shared"), "a shared limit is kept in Redis, in real time, which a simulated run (--virtual) cannot use; remove shared: or run without --virtual")
		}
	}
	errs.Sort()
	return errs.Err()
}
