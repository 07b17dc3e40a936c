package wire

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ratelab/ratelab/strategies"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestKindOf(t *testing.T) {
	tests := []struct {
		status int
		want   strategies.Kind
	}{
		{200, strategies.Success},
		{201, strategies.Success},
		{299, strategies.Success},
		{429, strategies.Throttled},
		{529, strategies.Overloaded},
		{503, strategies.Overloaded},
		{500, strategies.Failed},
		{502, strategies.Failed},
		{504, strategies.Failed},
		{400, strategies.Failed},
		{401, strategies.Failed},
		{408, strategies.Failed},
		{301, strategies.Failed},
		{0, strategies.Failed},
	}
	for _, tt := range tests {
		if got := KindOf(tt.status); got != tt.want {
			t.Errorf("KindOf(%d) = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		wantOK  bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "1"}, time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"float seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"spaces", map[string]string{"Retry-After": " 2 "}, 2 * time.Second, true},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, true},
		{"ms first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{"float ms", map[string]string{"Retry-After-Ms": "0.5"}, 500 * time.Microsecond, true},
		{"bad ms falls through", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second, true},
		{"NaN ms falls through", map[string]string{"Retry-After-Ms": "NaN", "Retry-After": "2"}, 2 * time.Second, true},
		{"http date", map[string]string{"Retry-After": t0.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second, true},
		{"http date past", map[string]string{"Retry-After": t0.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"rfc850 date", map[string]string{"Retry-After": t0.Add(5 * time.Second).Format(time.RFC850)}, 5 * time.Second, true},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0, false},
		{"infinite", map[string]string{"Retry-After": "+Inf"}, 0, false},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"huge", map[string]string{"Retry-After": "1e300"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got, ok := ParseRetryAfter(h, t0)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%v) = %v, %v; want %v, %v", tt.headers, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "1.5", "NaN", "+Inf", "1e308", "Wed, 21 Oct 2015 07:28:00 GMT", "", "  3  "} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ms, secs string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", secs)
		d, ok := ParseRetryAfter(h, t0)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(ms=%q, s=%q) = %v, negative", ms, secs, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(ms=%q, s=%q) = %v, false; want 0 when not ok", ms, secs, d)
		}
	})
}

func TestParseShouldRetry(t *testing.T) {
	tests := []struct {
		v    string
		want *bool
	}{
		{"", nil},
		{"true", ptr(true)},
		{"TRUE", ptr(true)},
		{"false", ptr(false)},
		{"maybe", nil},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.v != "" {
			h.Set("X-Should-Retry", tt.v)
		}
		got := ParseShouldRetry(h)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("ParseShouldRetry(%q) = %v, want %v", tt.v, fmtBool(got), fmtBool(tt.want))
		}
	}
}

func ptr[T any](v T) *T { return &v }

func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}
