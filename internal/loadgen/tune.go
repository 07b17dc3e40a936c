package loadgen

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/internal/reports"
)

// Objectives are what loadgen tune can minimise, each a function of a
// report row.
var Objectives = map[string]Objective{
	"wall":     {Doc: "wall time (wall_seconds)", Unit: " s", Of: func(r *reports.Result) float64 { return r.WallSeconds }},
	"attempts": {Doc: "HTTP attempts", Of: func(r *reports.Result) float64 { return float64(r.Attempts) }},
	"cost": {Doc: "tokens billed (input + output tokens the server reported)", Unit: " tokens",
		Of: func(r *reports.Result) float64 { return float64(r.InputTokens + r.OutputTokens) }},
}

// Objective is one of Objectives.
type Objective struct {
	Doc  string
	Unit string
	Of   func(*reports.Result) float64
}

// ObjectiveNames returns the objectives, sorted, for messages.
func ObjectiveNames() []string {
	names := make([]string, 0, len(Objectives))
	for k := range Objectives {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Tune chooses the best row of a run by objective (one of Objectives) among
// the rows that completed every item and had at most max429s 429s (-1: no
// limit). Ties go to fewer 429s, then to fewer attempts, then to the
// shorter wall time, then to the earlier row. The runner-up is the next row
// in that order; the margin is its objective less the best's.
func Tune(rep reports.Report, objective string, max429s int64) (reports.Tune, error) {
	obj, ok := Objectives[objective]
	if !ok {
		return reports.Tune{}, fmt.Errorf("loadgen: unknown objective %q (want one of %s)", objective, strings.Join(ObjectiveNames(), ", "))
	}
	t := reports.Tune{Objective: objective, Max429s: max429s}
	exclude := func(name, why string) {
		if t.Excluded == nil {
			t.Excluded = make(map[string]string)
		}
		t.Excluded[name] = why
	}
	var fit []*reports.Result
	for i := range rep.Results {
		r := &rep.Results[i]
		switch {
		case r.Incomplete:
			exclude(r.Name, "interrupted")
		case r.Completed < r.Items:
			exclude(r.Name, fmt.Sprintf("%d of %d items did not complete", r.Items-r.Completed, r.Items))
		case max429s >= 0 && r.Throttled > max429s:
			exclude(r.Name, fmt.Sprintf("%d 429s, more than %d", r.Throttled, max429s))
		default:
			fit = append(fit, r)
		}
	}
	slices.SortStableFunc(fit, func(a, b *reports.Result) int {
		for _, k := range [][2]float64{
			{obj.Of(a), obj.Of(b)},
			{float64(a.Throttled), float64(b.Throttled)},
			{float64(a.Attempts), float64(b.Attempts)},
			{a.WallSeconds, b.WallSeconds},
		} {
			if k[0] != k[1] {
				if k[0] < k[1] {
					return -1
				}
				return 1
			}
		}
		return 0
	})
	if len(fit) > 0 {
		t.Best, t.Value = fit[0].Name, obj.Of(fit[0])
	}
	if len(fit) > 1 {
		t.Next, t.NextValue = fit[1].Name, obj.Of(fit[1])
		t.Margin = t.NextValue - t.Value
	}
	return t, nil
}

// WriteTune writes tune's recommendation under the table:
//
//	best by wall time (wall_seconds), every item completed, any number of 429s:
//	  semaphore n=20: 5 s, 0 429s, 200 attempts
//	  margin: 0.5 s (10 %) ahead of semaphore n=25 (5.5 s)
//	left out: semaphore n=50 (30 of 200 items did not complete)
func WriteTune(w io.Writer, rep reports.Report) error {
	t := rep.Tune
	if t == nil {
		return nil
	}
	obj := Objectives[t.Objective]
	limit := "any number of 429s"
	if t.Max429s >= 0 {
		limit = fmt.Sprintf("at most %d 429s", t.Max429s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "best by %s, every item completed, %s:\n", obj.Doc, limit)
	if t.Best == "" {
		b.WriteString("  no row qualifies\n")
	} else {
		for _, r := range rep.Results {
			if r.Name == t.Best {
				fmt.Fprintf(&b, "  %s: %s, %d 429s, %d attempts\n", r.Name, value(t.Value, obj.Unit), r.Throttled, r.Attempts)
			}
		}
		switch {
		case t.Next == "":
			b.WriteString("  margin: none, no other row qualifies\n")
		case t.Value > 0:
			fmt.Fprintf(&b, "  margin: %s (%.3g %%) ahead of %s (%s)\n", value(t.Margin, obj.Unit), 100*t.Margin/t.Value, t.Next, value(t.NextValue, obj.Unit))
		default:
			fmt.Fprintf(&b, "  margin: %s ahead of %s (%s)\n", value(t.Margin, obj.Unit), t.Next, value(t.NextValue, obj.Unit))
		}
	}
	if len(t.Excluded) > 0 {
		var parts []string
		for _, r := range rep.Results {
			if why, ok := t.Excluded[r.Name]; ok {
				parts = append(parts, fmt.Sprintf("%s (%s)", r.Name, why))
			}
		}
		fmt.Fprintf(&b, "left out: %s\n", strings.Join(parts, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// value formats an objective's value with its unit: 5.25 s, 200, 30000 tokens.
func value(v float64, unit string) string {
	return fmt.Sprintf("%.4g%s", v, unit)
}
