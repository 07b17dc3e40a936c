// Package durhist records durations in an HdrHistogram and reads back their
// count, percentiles, maximum and mean. It is vocabulary, not behaviour: the
// mock's call account and engine's recorder both summarise latencies with
// it, so a p99 means the same figure on the server and on the client.
package durhist

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The histogram's resolution: durations are recorded in whole units, from
// one unit up to the ceiling, to Digits significant decimal digits.
const (
	Unit   = time.Microsecond
	Digits = 3

	// DefaultCeiling is the ceiling of a Histogram whose Ceiling is zero.
	DefaultCeiling = 24 * time.Hour
)

// A Histogram records durations: an HdrHistogram of the positive ones, with
// their exact count, sum and maximum beside it. Zeros (and negative
// durations) are only counted, so a histogram that only ever sees zeros
// never allocates its HdrHistogram (about 230 KB at the default ceiling).
// The zero value is ready to use.
type Histogram struct {
	// Ceiling is the largest duration the HdrHistogram holds; a longer one
	// is recorded as Ceiling there, while Max stays exact. Zero means
	// DefaultCeiling. Set it before the first Record.
	Ceiling time.Duration

	h     *hdrhistogram.Histogram
	count int64
	zeros int64
	sum   time.Duration
	max   time.Duration
}

func (h *Histogram) ceiling() int64 {
	c := h.Ceiling
	if c <= 0 {
		c = DefaultCeiling
	}
	return int64(c / Unit)
}

func (h *Histogram) alloc() {
	if h.h == nil {
		h.h = hdrhistogram.New(1, h.ceiling(), Digits)
	}
}

// Record adds d.
func (h *Histogram) Record(d time.Duration) {
	h.count++
	if d <= 0 {
		h.zeros++
		return
	}
	h.alloc()
	h.sum += d
	h.max = max(h.max, d)
	h.h.RecordValue(min(int64(d/Unit), h.ceiling())) //nolint:errcheck // clamped into range
}

// Merge adds every duration o recorded. Durations above h's ceiling that o
// holds are dropped from h's HdrHistogram (they stay in its count, sum and
// maximum); merge histograms of one ceiling.
func (h *Histogram) Merge(o *Histogram) {
	if o.h != nil {
		h.alloc()
		h.h.Merge(o.h)
	}
	h.count += o.count
	h.zeros += o.zeros
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count returns the number of durations recorded.
func (h *Histogram) Count() int64 { return h.count }

// Summary is a distribution of durations in seconds. P50, P90 and P99 come
// from the HdrHistogram (Digits significant digits) and never exceed Max;
// Count, Max and Mean are exact. Its fields are those of mock.Percentiles
// and measure.Percentiles, which convert from it.
type Summary struct {
	Count int64
	P50   float64
	P90   float64
	P99   float64
	Max   float64
	Mean  float64
}

// Summary returns the distribution of what h recorded; the zero Summary
// when it recorded nothing.
func (h *Histogram) Summary() Summary {
	if h.count == 0 {
		return Summary{}
	}
	return Summary{
		Count: h.count,
		P50:   h.Quantile(50),
		P90:   h.Quantile(90),
		P99:   h.Quantile(99),
		Max:   h.max.Seconds(),
		Mean:  h.sum.Seconds() / float64(h.count),
	}
}

// Quantile returns the duration at percentile p (0 to 100), in seconds. The
// zeros are the lowest values: a quantile that falls among them is 0;
// otherwise it is the matching quantile of the rest, at most Max.
func (h *Histogram) Quantile(p float64) float64 {
	nonzero := h.count - h.zeros
	rank := p / 100 * float64(h.count)
	if nonzero <= 0 || h.h == nil || rank <= float64(h.zeros) {
		return 0
	}
	pp := (rank - float64(h.zeros)) / float64(nonzero) * 100
	v := float64(h.h.ValueAtQuantile(pp)) * Unit.Seconds()
	return math.Min(v, h.max.Seconds())
}
