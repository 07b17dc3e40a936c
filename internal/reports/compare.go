package reports

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/olekukonko/tablewriter/tw"
)

// Comparison is the per-strategy difference between two runs of a
// scenario, as `loadgen compare OLD.json NEW.json` prints it. Strategies are
// matched by name.
type Comparison struct {
	OldScenario string  `json:"old_scenario"`
	NewScenario string  `json:"new_scenario"`
	Threshold   float64 `json:"threshold"` // relative change beyond which a worse metric regressed, e.g. 0.10

	Strategies []StrategyDelta `json:"strategies"`        // in the new report's order
	Missing    []string        `json:"missing,omitempty"` // in the old report only
	Added      []string        `json:"added,omitempty"`   // in the new report only
}

// StrategyDelta compares one strategy's metrics between the runs.
type StrategyDelta struct {
	Name    string        `json:"name"`
	Metrics []MetricDelta `json:"metrics"`
}

// MetricDelta is one metric in both runs.
type MetricDelta struct {
	Metric    string  `json:"metric"`
	Old       float64 `json:"old"`
	New       float64 `json:"new"`
	Regressed bool    `json:"regressed"` // worse by more than the threshold
}

// Change is the relative change from Old to New, (New−Old)/|Old|, and false
// when Old is zero and the change has no finite ratio.
func (d MetricDelta) Change() (float64, bool) {
	if d.Old == 0 {
		return 0, d.New == 0
	}
	return (d.New - d.Old) / math.Abs(d.Old), true
}

// comparedMetrics are the metrics Compare diffs, in display order. better
// is +1 when a higher value is better, -1 when lower is.
var comparedMetrics = []struct {
	name   string
	better int
	value  func(Result) float64
	format func(float64) string
}{
	{"completed", +1, func(r Result) float64 { return float64(r.Completed) }, func(f float64) string { return formatFixed(f, 0) }},
	{"attempts", -1, func(r Result) float64 { return float64(r.Attempts) }, func(f float64) string { return formatFixed(f, 0) }},
	{"429s", -1, func(r Result) float64 { return float64(r.Throttled) }, func(f float64) string { return formatFixed(f, 0) }},
	{"attempts/call", -1, func(r Result) float64 { return r.AttemptsPerCall }, func(f float64) string { return formatFixed(f, 2) }},
	{"wall s", -1, func(r Result) float64 { return r.WallSeconds }, func(f float64) string { return formatFixed(f, 2) }},
	{"p99 end to end", -1, func(r Result) float64 { return r.EndToEnd.P99 }, formatLatency},
}

// Compare diffs the strategies old and new have in common, by name, and
// lists those only one has. A metric regressed when it got worse by more
// than threshold, a fraction of its old value (0.10 is 10 %): fewer
// completed calls, or more attempts, 429s, attempts per call, wall time or
// p99. A metric that was zero regresses on any worsening, since no
// fraction of zero is tolerable: 0 → 1 429s is a regression at any
// threshold. Duplicate strategy names and a threshold that is negative or
// not a number are errors.
func Compare(old, new Report, threshold float64) (Comparison, error) {
	if math.IsNaN(threshold) || threshold < 0 {
		return Comparison{}, fmt.Errorf("reports: compare: threshold %v: want a fraction >= 0, e.g. 0.10", threshold)
	}
	oldByName, err := byName(old, "old")
	if err != nil {
		return Comparison{}, err
	}
	if _, err := byName(new, "new"); err != nil {
		return Comparison{}, err
	}
	c := Comparison{OldScenario: old.Scenario, NewScenario: new.Scenario, Threshold: threshold}
	seen := make(map[string]bool, len(new.Results))
	for _, n := range new.Results {
		seen[n.Name] = true
		o, ok := oldByName[n.Name]
		if !ok {
			c.Added = append(c.Added, n.Name)
			continue
		}
		d := StrategyDelta{Name: n.Name}
		for _, m := range comparedMetrics {
			md := MetricDelta{Metric: m.name, Old: m.value(o), New: m.value(n)}
			md.Regressed = regressed(md.Old, md.New, m.better, threshold)
			d.Metrics = append(d.Metrics, md)
		}
		c.Strategies = append(c.Strategies, d)
	}
	for _, o := range old.Results {
		if !seen[o.Name] {
			c.Missing = append(c.Missing, o.Name)
		}
	}
	return c, nil
}

// regressed reports whether new is worse than old by more than threshold
// of old.
func regressed(old, new float64, better int, threshold float64) bool {
	worse := (new - old) * float64(-better) // > 0 when new is worse
	if !(worse > 0) {
		return false
	}
	if old == 0 {
		return true
	}
	return worse/math.Abs(old) > threshold
}

func byName(r Report, which string) (map[string]Result, error) {
	m := make(map[string]Result, len(r.Results))
	for _, res := range r.Results {
		if _, dup := m[res.Name]; dup {
			return nil, fmt.Errorf("reports: compare: strategy %q appears twice in the %s report", res.Name, which)
		}
		m[res.Name] = res
	}
	return m, nil
}

// Regressed reports whether any metric of a matched strategy regressed
// beyond the threshold, or a strategy of the old run is missing from the
// new one (a check that no longer runs cannot pass). Added strategies are
// not regressions.
func (c Comparison) Regressed() bool {
	if len(c.Missing) > 0 {
		return true
	}
	for _, s := range c.Strategies {
		for _, m := range s.Metrics {
			if m.Regressed {
				return true
			}
		}
	}
	return false
}

// WriteTable writes c as a terminal table, a row per strategy and metric
// with the old and new values and the relative change, regressions marked;
// then the missing and added strategies and a one-line verdict.
func (c Comparison) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	title := c.NewScenario
	if c.OldScenario != c.NewScenario {
		title = c.OldScenario + " → " + c.NewScenario
	}
	fmt.Fprintf(ew, "compare %s · threshold %s%%\n\n", title, formatFixed(c.Threshold*100, thresholdDecimals(c.Threshold)))
	if ew.err != nil {
		return fmt.Errorf("reports: compare: %w", ew.err)
	}
	t := newPlainTable(tw.Alignment{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft})
	t.Header([]string{"strategy", "metric", "old", "new", "delta", "change", ""})
	for _, s := range c.Strategies {
		for i, m := range s.Metrics {
			name := ""
			if i == 0 {
				name = s.Name
			}
			format := comparedMetrics[i].format
			verdict := ""
			if m.Regressed {
				verdict = "REGRESSED"
			}
			delta := format(0)
			if d := m.New - m.Old; d > 0 {
				delta = "+" + format(d)
			} else if d < 0 {
				delta = "-" + format(-d)
			}
			if err := t.Append([]string{name, m.Metric, format(m.Old), format(m.New), delta, formatChange(m), verdict}); err != nil {
				return fmt.Errorf("reports: compare: %w", err)
			}
		}
	}
	if err := t.render(ew); err != nil {
		return fmt.Errorf("reports: compare: %w", err)
	}
	if len(c.Strategies) == 0 {
		fmt.Fprintln(ew, "(no strategy in both runs)")
	}
	fmt.Fprintln(ew)
	if len(c.Missing) > 0 {
		fmt.Fprintf(ew, "missing from the new run: %s\n", strings.Join(c.Missing, ", "))
	}
	if len(c.Added) > 0 {
		fmt.Fprintf(ew, "new in this run: %s\n", strings.Join(c.Added, ", "))
	}
	n := 0
	for _, s := range c.Strategies {
		for _, m := range s.Metrics {
			if m.Regressed {
				n++
			}
		}
	}
	switch {
	case n > 0:
		fmt.Fprintf(ew, "REGRESSED: %d %s worse by more than the threshold\n", n, plural(n, "metric", "metrics"))
	case len(c.Missing) > 0:
		fmt.Fprintln(ew, "REGRESSED: strategies missing from the new run")
	default:
		fmt.Fprintln(ew, "no regressions")
	}
	if ew.err != nil {
		return fmt.Errorf("reports: compare: %w", ew.err)
	}
	return nil
}

// formatChange formats a relative change as "+12.5%", "0%", or, from zero,
// "new" (anything from nothing).
func formatChange(m MetricDelta) string {
	ch, ok := m.Change()
	switch {
	case !ok:
		return "from 0"
	case ch == 0:
		return "0%"
	case ch > 0:
		return "+" + formatFixed(ch*100, 1) + "%"
	default:
		return "-" + formatFixed(-ch*100, 1) + "%"
	}
}

func thresholdDecimals(t float64) int {
	if v := t * 100; math.Abs(v-math.Round(v)) < 1e-9 {
		return 0
	}
	return 1
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
