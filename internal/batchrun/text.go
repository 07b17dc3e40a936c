package batchrun

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteJSON prints the report as one JSON document, as loadgen batch
// --format json does: the input and output files, the report's fields, and
// incomplete when items have no result yet.
func (r Report) WriteJSON(w io.Writer, input, output string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Input  string `json:"input"`
		Output string `json:"output"`
		Report
		Incomplete bool `json:"incomplete,omitempty"`
	}{input, output, r, r.Remaining > 0})
}

// WriteText prints what the batch did, as loadgen batch's summary.
func (r Report) WriteText(w io.Writer, input, output string) {
	fmt.Fprintf(w, "batch %s → %s: %s %s at %s, strategy %s", input, output, r.Provider, r.Model, r.Target, r.Strategy)
	if r.Shared != "" {
		fmt.Fprintf(w, " sharing limit %q through %s", r.Shared, r.SharedRedis)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  items        %d", r.Items)
	if r.Invalid.Total > 0 {
		fmt.Fprintf(w, " (%d invalid lines skipped)", r.Invalid.Total)
	}
	fmt.Fprintf(w, "; already done %d (%d with errors)\n", r.DoneOK+r.DoneFailed, r.DoneFailed)
	fmt.Fprintf(w, "  completed    %d\n", r.Completed)
	fmt.Fprintf(w, "  failed       %d", r.Failed)
	if len(r.FailedByType) > 0 {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(r.FailedByType)) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, r.FailedByType[k]))
		}
		fmt.Fprintf(w, ": %s", strings.Join(kinds, ", "))
	}
	fmt.Fprintln(w)
	if len(r.Providers) > 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r.Providers)) {
			c := r.Providers[name]
			parts = append(parts, fmt.Sprintf("%s %d/%d", name, c.Completed, c.Completed+c.Failed))
		}
		fmt.Fprintf(w, "  by provider  %s (completed/recorded)\n", strings.Join(parts, ", "))
	}
	if r.Remaining > 0 {
		fmt.Fprintf(w, "  remaining    %d (incomplete)\n", r.Remaining)
	}
	fmt.Fprintf(w, "  attempts     %d (429s %d, overloaded %d, re-queued %d", r.Run.Attempts, r.Run.Throttled, r.Run.Overloaded, r.Requeued)
	if r.Run.Invalid > 0 {
		fmt.Fprintf(w, ", rejected by the schema %d", r.Run.Invalid)
	}
	fmt.Fprintln(w, ")")
	if r.QuotaSpent > 0 {
		fmt.Fprintf(w, "  quota spent  %d refused, not recorded: the batch stopped; rerun to resume\n", r.QuotaSpent)
	}
	if r.Outages > 0 {
		fmt.Fprintf(w, "  outages      %d, paused %.1f s in all\n", r.Outages, r.OutageSeconds)
	}
	fmt.Fprintf(w, "  tokens       in %d, out %d\n", r.Run.InputTokens, r.Run.OutputTokens)
	fmt.Fprintf(w, "  wall time    %.1f s\n", r.Run.WallSeconds)
	st := r.Run.Stats
	switch {
	case r.Run.FinalLimit > 0:
		fmt.Fprintf(w, "  final limit  %g concurrent", r.Run.FinalLimit)
	case st.Rate > 0:
		fmt.Fprintf(w, "  final rate   %.3g/s", st.Rate)
	case st.Delay > 0:
		fmt.Fprintf(w, "  final delay  %.3g s", st.Delay)
	default:
		return
	}
	if r.StateFile != "" {
		fmt.Fprintf(w, " (state %s", r.StateFile)
		if r.StateLoaded {
			fmt.Fprint(w, ", started from it")
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
}

// WriteText prints what the batch did through the batch API, as loadgen
// batch --via batch-api's summary.
func (rep APIReport) WriteText(w io.Writer, input, output string) {
	fmt.Fprintf(w, "batch %s → %s: %s %s at %s, via its batch API (state %s)\n", input, output, rep.Provider, rep.Model, rep.Target, rep.State)
	fmt.Fprintf(w, "  items        %d; already done %d (%d with errors)\n", rep.Items, rep.DoneOK+rep.DoneFailed, rep.DoneFailed)
	fmt.Fprintf(w, "  completed    %d\n  failed       %d\n", rep.Completed, rep.Failed)
	fmt.Fprintf(w, "  batches      created %d, adopted %d, refused %d; resubmitted %d items\n", rep.Created, rep.Adopted, rep.Refused, rep.Resubmitted)
	fmt.Fprintf(w, "  outcomes     succeeded %d, errored %d, expired %d, canceled %d\n", rep.Outcomes["succeeded"], rep.Outcomes["errored"], rep.Outcomes["expired"], rep.Outcomes["canceled"])
	fmt.Fprintf(w, "  tokens       in %d, out %d\n  wall time    %.1f s\n", rep.Run.InputTokens, rep.Run.OutputTokens, rep.Run.WallSeconds)
}
