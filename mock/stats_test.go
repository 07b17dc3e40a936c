package mock

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ratelab/ratelab/mock/internal/anthropic"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// views reads the counters of key from the three places they are shown:
// Stats' totals, Stats.Keys and /metrics (the registry /metrics serves),
// under one set of names.
func views(t *testing.T, s *Server, key string) (total, perKey, prom map[string]float64) {
	t.Helper()
	st := s.Stats()
	fromStats := func(attempts, admitted, throttled, overloaded, errors, in, out int64, by map[string]int64) map[string]float64 {
		m := map[string]float64{
			"attempts": float64(attempts), "admitted": float64(admitted), "throttled": float64(throttled),
			"overloaded": float64(overloaded), "errors": float64(errors), "input_tokens": float64(in), "output_tokens": float64(out),
		}
		for l, n := range by {
			m["throttled_by."+l] = float64(n)
		}
		return m
	}
	total = fromStats(st.Attempts, st.Admitted, st.Throttled, st.Overloaded, st.Errors, st.InputTokens, st.OutputTokens, st.ThrottledBy)
	for f, n := range st.Faults {
		total["fault."+f] = float64(n)
	}
	total["in_flight"] = float64(st.InFlight)
	k := st.Keys[Fingerprint(key)]
	perKey = fromStats(k.Attempts, k.Admitted, k.Throttled, k.Overloaded, k.Errors, k.InputTokens, k.OutputTokens, k.ThrottledBy)
	perKey["in_flight"] = float64(k.InFlight)

	families, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	prom = map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			switch f.GetName() {
			case "mockllm_requests_total":
				if labels["key"] != Fingerprint(key) {
					continue
				}
				prom["attempts"] += v
				switch st := labels["status"]; st {
				case "200":
					prom["admitted"] += v
				case "429":
					prom["throttled"] += v
				case "529", "503":
					prom["overloaded"] += v
				default:
					prom["errors"] += v
				}
			case "mockllm_rejections_total":
				if l := labels["limit"]; l != limitCapacity {
					prom["throttled_by."+l] = v
				}
			case "mockllm_faults_total":
				prom["fault."+labels["fault"]] = v
			case "mockllm_tokens_total":
				prom[labels["direction"]+"_tokens"] = v
			case "mockllm_in_flight_requests":
				prom["in_flight"] = v
			case "mockllm_calls_total":
				prom["calls"] = v
			case "mockllm_stream_merged_events_total":
				prom["merged"] = v
			}
		}
	}
	return total, perKey, prom
}

// delta is after − before for every name of either.
func delta(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if v != before[k] {
			d[k] = v - before[k]
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok && v != 0 {
			d[k] = -v
		}
	}
	return d
}

// TestOneCountThreeViews holds Stats' totals, Stats.Keys and /metrics to
// one count: each step's requests move every view of a counter by the same
// amount, one a request.
func TestOneCountThreeViews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const key = "k1"
		cfg := DefaultConfig()
		cfg.APIKeys = []string{key}
		cfg.Limits.RPM = 2
		cfg.Capacity.MaxConcurrent = 1
		cfg.Latency.TTFT = 0
		cfg.Latency.PerToken = 10 * time.Millisecond
		ts := startServer(t, cfg)
		defer ts.stop()
		body := func(text string) string { return anthropicBody(10, false, text) }
		send := func(b string) reply { return ts.do(t, "POST", "/v1/messages", b, "X-Api-Key", key) }
		inTokens := func(b string) float64 {
			var c wire.Call
			if err := anthropic.DecodeMessages([]byte(b), true, &c); err != nil {
				t.Fatal(err)
			}
			return float64(c.Input)
		}

		steps := []struct {
			name string
			run  func() []int // the statuses answered
			want map[string]float64
		}{
			{"one admitted", func() []int { return []int{send(body("a")).status} },
				map[string]float64{"attempts": 1, "admitted": 1, "input_tokens": inTokens(body("a")), "output_tokens": 10}},
			{"admitted, and one over capacity meanwhile", func() []int {
				done := make(chan int)
				go func() { done <- send(body("b")).status }()
				synctest.Wait() // b is admitted and waits for its tokens
				over := send(body("c")).status
				return []int{<-done, over}
			}, map[string]float64{"attempts": 2, "admitted": 1, "overloaded": 1, "input_tokens": inTokens(body("b")), "output_tokens": 10}},
			{"429 for rpm", func() []int { return []int{send(body("d")).status} },
				map[string]float64{"attempts": 1, "throttled": 1, "throttled_by.rpm": 1}},
			{"400", func() []int { return []int{send(`{"model":"claude-sonnet-4-5"}`).status} },
				map[string]float64{"attempts": 1, "errors": 1}},
			{"injected overload", func() []int {
				ts.SetFaults(Faults{Overloaded: 1})
				defer ts.SetFaults(Faults{})
				return []int{send(body("e")).status}
			}, map[string]float64{"attempts": 1, "overloaded": 1, "fault.overloaded": 1}},
		}
		wantStatus := [][]int{{200}, {200, 529}, {429}, {400}, {529}}
		for i, step := range steps {
			t0, k0, p0 := views(t, ts.Server, key)
			if got := step.run(); !slices.Equal(got, wantStatus[i]) {
				t.Fatalf("%s: statuses %v, want %v", step.name, got, wantStatus[i])
			}
			t1, k1, p1 := views(t, ts.Server, key)
			dt, dk, dp := delta(t0, t1), delta(k0, k1), delta(p0, p1)
			// Only /metrics counts calls and merged events, and Stats.Keys no faults.
			delete(dp, "calls")
			delete(dp, "merged")
			for name := range dt {
				if strings.HasPrefix(name, "fault.") {
					if dp[name] != dt[name] {
						t.Errorf("%s: %s moved %v in Stats and %v in /metrics", step.name, name, dt[name], dp[name])
					}
					delete(dt, name)
					delete(dp, name)
				}
			}
			want := maps.Clone(step.want)
			delete(want, "fault.overloaded")
			for view, d := range map[string]map[string]float64{"Stats": dt, "Stats.Keys": dk, "/metrics": dp} {
				if !maps.Equal(d, want) {
					t.Errorf("%s: %s moved by %v, want %v", step.name, view, d, want)
				}
			}
		}

		// Reset clears Stats; /metrics counts from the start.
		_, _, p0 := views(t, ts.Server, key)
		ts.Reset()
		tr, kr, pr := views(t, ts.Server, key)
		if tr["attempts"] != 0 || kr["attempts"] != 0 {
			t.Errorf("after Reset: Stats attempts %v, key attempts %v, want 0", tr["attempts"], kr["attempts"])
		}
		if d := delta(p0, pr); len(d) != 0 {
			t.Errorf("Reset moved /metrics by %v", d)
		}
	})
}

// TestMergedEvents holds the merge rule: a stream that fell behind its
// schedule sends the tokens due by then in one event, and
// mockllm_stream_merged_events_total counts that event. The client stops
// reading for 55 ms, so the server's write of token 1 (due at 10 ms) blocks
// until then; at 55 ms tokens 2–5 are due and go out together; the rest is
// on time.
func TestMergedEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.TTFT = 0
		cfg.Latency.PerToken = 10 * time.Millisecond
		ts := startServer(t, cfg)
		defer ts.stop()
		req, _ := http.NewRequest("POST", "http://mock/v1/messages", strings.NewReader(anthropicBody(10, true, "hi")))
		setHeaders(req, nil)
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(55 * time.Millisecond)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(body), `"text_delta"`); got != 7 {
			t.Errorf("%d text deltas, want 7 (token 1, tokens 2-5 together, then 6-10 one each):\n%s", got, body)
		}
		_, _, prom := views(t, ts.Server, "")
		if prom["merged"] != 1 || prom["output_tokens"] != 10 {
			t.Errorf("/metrics: merged events %v, output tokens %v; want 1 and 10", prom["merged"], prom["output_tokens"])
		}
	})
}
