package reports

import (
	"fmt"
	"github.com/ratelab/ratelab/measure"
	"io"
	"math"
	"strconv"
	"strings"
)

// A Renderer writes a Report in one format. Every renderer in this package
// has this shape, so a caller picks one with Format and calls it without
// knowing which it got.
type Renderer func(w io.Writer, r Report) error

// formats maps the names --format accepts to their renderers.
var formats = map[string]Renderer{
	"table":    Table,
	"json":     JSON,
	"csv":      CSV,
	"markdown": Markdown,
}

// FormatNames lists the names Format accepts, in the order help text shows them.
func FormatNames() []string { return []string{"table", "json", "csv", "markdown"} }

// Format returns the renderer called name: table, json, csv or markdown.
// An unknown name is an error naming the valid choices.
func Format(name string) (Renderer, error) {
	if r, ok := formats[name]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("reports: unknown format %q (want table, json, csv or markdown)", name)
}

// A File is one file of a run's output directory and the renderer that
// writes it.
type File struct {
	Name   string // base name, e.g. "report.html"
	Render Renderer
}

// Files lists the report files `loadgen run --out DIR` writes: report.json,
// report.md and report.html. results.jsonl is per item and not rendered from
// a Report, so it is not here.
func Files() []File {
	return []File{
		{Name: "report.json", Render: JSON},
		{Name: "report.md", Render: Markdown},
		{Name: "report.html", Render: HTML},
	}
}

// groupDigits inserts thousands separators into a string of ASCII digits,
// with an optional leading minus sign: "-1234567" → "-1,234,567".
func groupDigits(s string) string {
	sign, digits := "", s
	if strings.HasPrefix(s, "-") {
		sign, digits = "-", s[1:]
	}
	if len(digits) <= 3 {
		return s
	}
	var b strings.Builder
	b.WriteString(sign)
	head := len(digits) % 3
	if head == 0 {
		head = 3
	}
	b.WriteString(digits[:head])
	for i := head; i < len(digits); i += 3 {
		b.WriteByte(',')
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// FormatInt formats n with thousands separators as every report does:
// 1100 → "1,100". Other packages' messages use it to print counts the
// same way.
func FormatInt(n int64) string { return formatInt(n) }

// formatInt formats n with thousands separators: 1100 → "1,100".
func formatInt[T ~int | ~int64](n T) string {
	return groupDigits(strconv.FormatInt(int64(n), 10))
}

// formatFixed formats f with prec decimals and thousands separators in the
// integer part: 1234.5 → "1,234.50". NaN and infinities print as "-".
func formatFixed(f float64, prec int) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if s == "-"+strconv.FormatFloat(0, 'f', prec, 64) {
		s = s[1:] // -0.00 → 0.00
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	intPart = groupDigits(intPart)
	if hasFrac {
		return intPart + "." + frac
	}
	return intPart
}

// formatLatency formats a duration in seconds at a precision that suits its
// size: "850µs", "5.2ms", "512ms", "1.25s", "1,234s". The unit is chosen
// after rounding, so 0.9996 s prints as "1.00s", not "1000ms".
func formatLatency(sec float64) string {
	switch {
	case math.IsNaN(sec) || math.IsInf(sec, 0) || sec < 0:
		return "-"
	case sec == 0:
		return "0"
	case math.Round(sec*1e6) < 1000:
		return strconv.FormatFloat(math.Round(sec*1e6), 'f', 0, 64) + "µs"
	case math.Round(sec*1e4) < 100:
		return strconv.FormatFloat(sec*1e3, 'f', 1, 64) + "ms"
	case math.Round(sec*1e3) < 1000:
		return strconv.FormatFloat(sec*1e3, 'f', 0, 64) + "ms"
	case math.Round(sec*100) < 100*100:
		return strconv.FormatFloat(sec, 'f', 2, 64) + "s"
	default:
		return formatFixed(sec, 0) + "s"
	}
}

// formatPercentile formats one percentile of p, or "-" when p recorded
// nothing.
func formatPercentile(p measure.Percentiles, v float64) string {
	if p.Count == 0 {
		return "-"
	}
	return formatLatency(v)
}

// number formats f for CSV: rounded to six decimals (a microsecond, for
// times), then the shortest decimal, never in exponent form, no
// separators, so 0.9104028877999999 is 0.910403. JSON keeps full precision.
func number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	s := strconv.FormatFloat(math.Round(f*1e6)/1e6, 'f', -1, 64)
	if s == "-0" {
		s = "0"
	}
	return s
}
