package mock

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLogNormalStatistics draws 200,000 lengths and holds them to the
// distribution's mean, median and spread: bounds of several standard
// errors, fixed by the seed, so the test is exact and not flaky.
func TestLogNormalStatistics(t *testing.T) {
	for _, tt := range []struct{ mean, sigma float64 }{{300, 0.5}, {80, 1}, {1000, 0.1}} {
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 200000
		xs := make([]float64, n)
		sum, sumLog := 0.0, 0.0
		for i := range xs {
			xs[i] = float64(drawLogNormal(rng, tt.mean, tt.sigma))
			sum += xs[i]
			sumLog += math.Log(xs[i])
		}
		mean, meanLog := sum/n, sumLog/n
		varLog := 0.0
		for _, x := range xs {
			varLog += (math.Log(x) - meanLog) * (math.Log(x) - meanLog)
		}
		sdLog := math.Sqrt(varLog / n)
		slices.Sort(xs)
		median := xs[n/2]
		wantMedian := tt.mean * math.Exp(-tt.sigma*tt.sigma/2)
		// The standard error of the mean is mean·sqrt(e^σ²-1)/sqrt(n):
		// 0.12 % for σ 0.5, 0.29 % for σ 1; 1.5 % is five of them or more.
		if math.Abs(mean-tt.mean)/tt.mean > 0.015 {
			t.Errorf("lognormal(%v, %v): mean %.2f, want %v within 1.5 %%", tt.mean, tt.sigma, mean, tt.mean)
		}
		if math.Abs(median-wantMedian)/wantMedian > 0.015 {
			t.Errorf("lognormal(%v, %v): median %v, want %.1f within 1.5 %%", tt.mean, tt.sigma, median, wantMedian)
		}
		// Rounding to whole tokens blurs the logarithm of small lengths a
		// little; 3 % holds for these means.
		if math.Abs(sdLog-tt.sigma)/tt.sigma > 0.03 {
			t.Errorf("lognormal(%v, %v): sd of log %.4f, want %v within 3 %%", tt.mean, tt.sigma, sdLog, tt.sigma)
		}
		if xs[0] < 1 {
			t.Errorf("lognormal(%v, %v): drew %v, want at least 1", tt.mean, tt.sigma, xs[0])
		}
	}
}

func TestSamplersDeterministic(t *testing.T) {
	h, err := NewObservations([]int{10, 20, 30}, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	draw := func(seed uint64) []int {
		rng := rand.New(rand.NewPCG(seed, 0))
		var out []int
		for range 50 {
			out = append(out, drawLogNormal(rng, 100, 0.7), h.draw(rng))
		}
		return out
	}
	if a, b := draw(7), draw(7); !slices.Equal(a, b) {
		t.Errorf("the same seed drew %v and %v", a, b)
	}
	if a, b := draw(7), draw(8); slices.Equal(a, b) {
		t.Errorf("seeds 7 and 8 drew the same %v", a)
	}
}

// TestHistogramFrequencies draws 100,000 lengths from observations of
// weights 1:2:3:4 and holds each frequency within 0.01 of its share (the
// standard error of a share is at most 0.0016).
func TestHistogramFrequencies(t *testing.T) {
	h, err := NewObservations([]int{40, 10, 30, 20, 10}, []float64{4, 0.5, 3, 2, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Values, []int{10, 20, 30, 40}) || !slices.Equal(h.Weights, []float64{1, 2, 3, 4}) {
		t.Fatalf("values, weights = %v, %v; want [10 20 30 40], [1 2 3 4] (repeats merged)", h.Values, h.Weights)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 100000
	count := make(map[int]int)
	for range n {
		count[h.draw(rng)]++
	}
	for i, v := range h.Values {
		want := h.Weights[i] / 10
		if got := float64(count[v]) / n; math.Abs(got-want) > 0.01 {
			t.Errorf("%d drawn %.4f of the time, want %.2f", v, got, want)
		}
	}
	if len(count) != 4 {
		t.Errorf("drew %d distinct values, want the 4 observed", len(count))
	}
	if got, want := h.mean(1000), 30.0; got != want {
		t.Errorf("mean = %v, want %v", got, want)
	}
	if got, want := h.mean(25), (10*1+20*2+25*3+25*4)/10.0; got != want {
		t.Errorf("mean under max_tokens 25 = %v, want %v", got, want)
	}
}

// TestLogNormalCappedMean checks the closed form of the mean under a cap
// against draws.
func TestLogNormalCappedMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 200000
	for _, m := range []int{100, 300, 100000} {
		sum := 0.0
		for range n {
			sum += float64(min(drawLogNormal(rng, 300, 0.8), m))
		}
		got := Distribution{Kind: LogNormal, Mean: 300, Sigma: 0.8}.MeanTokens(m)
		if want := sum / n; math.Abs(got-want)/want > 0.01 {
			t.Errorf("MeanTokens(%d) = %.2f, draws average %.2f", m, got, want)
		}
	}
}

func TestReadHistogram(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, text string
		values     []int
		weights    []float64
		err        string
	}{
		{"counts", "# observed\n120\n\n80\n120\n", []int{80, 120}, []float64{1, 2}, ""},
		{"weights", "120 3\n80,1.5\n", []int{80, 120}, []float64{1.5, 3}, ""},
		{"batch results", `{"index":0,"id":"a","text":"x","usage":{"input_tokens":9,"output_tokens":57},"attempts":1}
{"index":1,"id":"b","usage":{"input_tokens":0,"output_tokens":0},"error":{"status":429}}
{"index":2,"id":"c","usage":{"input_tokens":9,"output_tokens":61},"attempts":1}`, []int{57, 61}, []float64{1, 1}, ""},
		{"not a number", "120\nabc\n", nil, nil, "h.txt:2: want a token count from 1 to 128000, got \"abc\""},
		{"zero", "0\n", nil, nil, "h.txt:1: want a token count from 1 to 128000, got \"0\""},
		{"bad weight", "12 -1\n", nil, nil, "h.txt:1: want a positive weight (how many times 12 was seen), got \"-1\""},
		{"bad JSON", "{\"usage\": \n", nil, nil, "h.txt:1: invalid JSON"},
		{"empty", "# nothing\n", nil, nil, "h.txt: no token counts in the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ReadHistogram(write("h.txt", tt.text))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(h.Values, tt.values) || !slices.Equal(h.Weights, tt.weights) {
				t.Errorf("values, weights = %v, %v; want %v, %v", h.Values, h.Weights, tt.values, tt.weights)
			}
		})
	}
}

func TestConfigSampledDistributions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lengths.txt"), []byte("50\n70 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("50\nfifty\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "mock.yaml")
	cfg, err := ParseConfig([]byte("output:\n  tokens: {lognormal: {mean: 300, sigma: 0.5}}\n"), file)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Output.Tokens; d.Kind != LogNormal || d.Mean != 300 || d.Sigma != 0.5 || d.String() != "{lognormal: {mean: 300, sigma: 0.5}}" {
		t.Errorf("tokens = %+v (%s), want lognormal 300, 0.5", d, d)
	}
	cfg, err = ParseConfig([]byte("output:\n  tokens: {histogram: lengths.txt}\n"), file)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Output.Tokens; d.Kind != Histogram || !slices.Equal(d.Observed.Values, []int{50, 70}) || d.String() != "{histogram: lengths.txt}" {
		t.Errorf("tokens = %+v (%s), want the histogram of lengths.txt, relative to the config", d, d)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"output:\n  tokens: {histogram: bad.txt}\n", "mock.yaml:2: output.tokens.histogram: " + filepath.Join(dir, "bad.txt") + ":2: want a token count"},
		{"output:\n  tokens: {histogram: missing.txt}\n", "mock.yaml:2: output.tokens.histogram: " + filepath.Join(dir, "missing.txt") + ": no such file or directory"},
		{"output:\n  tokens: {lognormal: {mean: 300, sigma: -1}}\n", "mock.yaml:2: output.tokens.lognormal.sigma: must be from 0 to 4"},
		{"output:\n  tokens: {lognormal: {mean: 0.5}}\n", "mock.yaml:2: output.tokens.lognormal.mean: must be from 1 to 128000 tokens, got 0.5"},
		{"output:\n  tokens: {lognormal: {sigma: 1}}\n", "mock.yaml:2: output.tokens.lognormal.mean: required"},
		{"output:\n  tokens: {lognormal: {mean: 9, sd: 1}}\n", `mock.yaml:2: output.tokens.lognormal.sd: unknown key "sd"`},
		{"output:\n  tokens: {poisson: 3}\n", `unknown output distribution "poisson": want max_tokens, {fixed: N}, {uniform: [MIN, MAX]}, {lognormal: {mean: TOKENS, sigma: S}} or {histogram: FILE}`},
	} {
		_, err := ParseConfig([]byte(tt.yaml), file)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}
