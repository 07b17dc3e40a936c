package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// MaxHistogramBytes bounds a histogram file: a results.jsonl of a large
// batch, texts included, is read line by line and only its counts kept.
const MaxHistogramBytes = 1 << 30

// NewObservations makes Observations of the observed counts: values[i] seen
// weights[i] times.
func NewObservations(values []int, weights []float64) (*Observations, error) {
	if len(values) != len(weights) {
		return nil, errors.New("mock: histogram: values and weights differ in length")
	}
	byValue := make(map[int]float64)
	for i, v := range values {
		if v < 1 || weights[i] <= 0 || math.IsInf(weights[i], 0) || math.IsNaN(weights[i]) {
			return nil, fmt.Errorf("mock: histogram: value %d with weight %v: want a positive count and weight", v, weights[i])
		}
		byValue[v] += weights[i]
	}
	if len(byValue) == 0 {
		return nil, errors.New("mock: histogram: no observations")
	}
	h := &Observations{Values: make([]int, 0, len(byValue))}
	for v := range byValue {
		h.Values = append(h.Values, v)
	}
	slices.Sort(h.Values)
	total := 0.0
	for _, v := range h.Values {
		h.Weights = append(h.Weights, byValue[v])
		total += byValue[v]
		h.cum = append(h.cum, total)
	}
	return h, nil
}

// ReadHistogram reads a histogram file (see Observations). Its error names the
// file and the line at fault.
func ReadHistogram(path string) (*Observations, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	var values []int
	var weights []float64
	br := bufio.NewReaderSize(io.LimitReader(f, MaxHistogramBytes), 64<<10)
	for line := 1; ; line++ {
		text, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		v, w, perr := histogramLine(bytes.TrimSpace(text))
		if perr != "" {
			return nil, fmt.Errorf("%s:%d: %s", path, line, perr)
		}
		if w > 0 {
			values, weights = append(values, v), append(weights, w)
		}
		if err != nil {
			break
		}
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("%s: no token counts in the file (want one count a line, or loadgen batch results)", path)
	}
	h, err := NewObservations(values, weights)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h.File = path
	return h, nil
}

// histogramLine parses one line: a count with its weight, a weight of 0 for
// a line without one, or a message.
func histogramLine(b []byte) (int, float64, string) {
	if len(b) == 0 || b[0] == '#' {
		return 0, 0, ""
	}
	if b[0] == '{' {
		var res struct {
			Usage *struct {
				OutputTokens *int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return 0, 0, fmt.Sprintf("invalid JSON: %v", strings.TrimPrefix(err.Error(), "json: "))
		}
		if res.Usage == nil || res.Usage.OutputTokens == nil || *res.Usage.OutputTokens <= 0 {
			return 0, 0, "" // a failed item: nothing was generated
		}
		return *res.Usage.OutputTokens, 1, ""
	}
	fields := strings.FieldsFunc(string(b), func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	if len(fields) > 2 {
		return 0, 0, fmt.Sprintf("want COUNT or COUNT WEIGHT, got %q", string(b))
	}
	v, err := strconv.Atoi(fields[0])
	if err != nil || v < 1 || v > wire.MaxOutputTokens {
		return 0, 0, fmt.Sprintf("want a token count from 1 to %d, got %q", wire.MaxOutputTokens, fields[0])
	}
	w := 1.0
	if len(fields) == 2 {
		w, err = strconv.ParseFloat(fields[1], 64)
		if err != nil || w <= 0 || math.IsInf(w, 0) {
			return 0, 0, fmt.Sprintf("want a positive weight (how many times %d was seen), got %q", v, fields[1])
		}
	}
	return v, w, ""
}

// draw returns one observation, each as likely as its weight.
func (h *Observations) draw(rng *rand.Rand) int {
	u := rng.Float64() * h.cum[len(h.cum)-1]
	i, _ := slices.BinarySearch(h.cum, u)
	// BinarySearch finds the first running sum >= u; u == a sum belongs to
	// the next value, whose interval starts there.
	for i < len(h.cum)-1 && h.cum[i] <= u {
		i++
	}
	return h.Values[i]
}

// mean is the histogram's mean length under a cap of maxTokens.
func (h *Observations) mean(maxTokens int) float64 {
	sum := 0.0
	for i, v := range h.Values {
		sum += float64(min(v, maxTokens)) * h.Weights[i]
	}
	return sum / h.cum[len(h.cum)-1]
}

// drawLogNormal returns a length from the lognormal distribution whose mean
// is mean tokens and whose logarithm has standard deviation sigma: at
// least 1.
func drawLogNormal(rng *rand.Rand, mean, sigma float64) int {
	mu := math.Log(mean) - sigma*sigma/2
	x := math.Exp(mu + sigma*rng.NormFloat64())
	if x >= wire.MaxOutputTokens {
		return wire.MaxOutputTokens
	}
	return max(1, int(math.Round(x)))
}

// logNormalMean is E[min(X, m)] for the lognormal X of that mean and sigma:
// the mean length under a cap of max_tokens.
func logNormalMean(mean, sigma float64, m int) float64 {
	if sigma == 0 {
		return min(mean, float64(m))
	}
	mu := math.Log(mean) - sigma*sigma/2
	phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	lm := math.Log(float64(m))
	return mean*phi((lm-mu-sigma*sigma)/sigma) + float64(m)*(1-phi((lm-mu)/sigma))
}

// MeanTokens returns the mean output length of d for a request's
// max_tokens (the cap every length is under): what a run's oracle and token
// budgets expect. For max_tokens it is maxTokens (natural lengths aside).
func (d Distribution) MeanTokens(maxTokens int) float64 {
	switch d.Kind {
	case Fixed:
		return float64(min(d.Min, maxTokens))
	case Uniform:
		sum := 0.0
		for v := d.Min; v <= d.Max; v++ {
			sum += float64(min(v, maxTokens))
		}
		return sum / float64(d.Max-d.Min+1)
	case LogNormal:
		return logNormalMean(d.Mean, d.Sigma, maxTokens)
	case Histogram:
		return d.Observed.mean(maxTokens)
	}
	return float64(maxTokens)
}

// decodeSampled decodes {lognormal: {mean, sigma}} or {histogram: FILE}
// into dist; a relative FILE is relative to the configuration file's
// directory.
func (dist *Distribution) decodeSampled(d *strict.Decoder, key string, val *yaml.Node, path string) {
	p := fielderr.Join(path, key)
	switch key {
	case "lognormal":
		var ln struct {
			Mean  float64 `yaml:"mean"`
			Sigma float64 `yaml:"sigma"`
		}
		d.Decode(val, &ln, p)
		if !d.Set(fielderr.Join(p, "mean")) && !d.Failed(p) {
			d.Errorf(val, fielderr.Join(p, "mean"), "required: the mean output length in tokens")
		}
		*dist = Distribution{Kind: LogNormal, Mean: ln.Mean, Sigma: ln.Sigma}
	case "histogram":
		var file string
		d.Decode(val, &file, p)
		if d.Failed(p) {
			return
		}
		if file == "" {
			d.Errorf(val, p, "want a file of observed token counts, got %s", strict.DescribeNode(val))
			return
		}
		at := file
		if !filepath.IsAbs(at) && d.File() != "" {
			at = filepath.Join(filepath.Dir(d.File()), file)
		}
		h, err := ReadHistogram(at)
		if err != nil {
			d.Errorf(val, p, "%v", err)
			return
		}
		h.File = file
		*dist = Distribution{Kind: Histogram, Observed: h}
	}
}

// validateSampled checks a lognormal or histogram distribution.
func validateSampled(d Distribution, check func(ok bool, path, format string, args ...any)) {
	if d.Kind == Histogram {
		check(d.Observed != nil && len(d.Observed.Values) > 0, "output.tokens.histogram", "has no observations")
		return
	}
	check(d.Mean >= 1 && d.Mean <= wire.MaxOutputTokens, "output.tokens.lognormal.mean",
		"must be from 1 to %d tokens, got %v", wire.MaxOutputTokens, d.Mean)
	check(d.Sigma >= 0 && d.Sigma <= 4, "output.tokens.lognormal.sigma",
		"must be from 0 to 4 (the standard deviation of the length's logarithm; 0.5 to 1 is typical), got %v", d.Sigma)
}
