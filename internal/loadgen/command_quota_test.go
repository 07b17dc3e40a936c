package loadgen

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/reports"
	"github.com/ratelab/ratelab/mock"
)

// TestFillFromServerQuota builds a command row from the mock's account of
// five calls against a quota of two requests: the three refusals are the
// row's quota refusals, not its 429s for rate limiting.
func TestFillFromServerQuota(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 0
	cfg.Quota = mock.Quota{Requests: 2}
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for i := range 5 {
		body := `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"call ` + strconv.Itoa(i) + `"}]}`
		req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("content-type", "application/json")
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, req)
		if want := map[bool]int{true: http.StatusOK, false: http.StatusTooManyRequests}[i < 2]; w.Code != want {
			t.Fatalf("call %d: status %d, want %d", i, w.Code, want)
		}
	}
	var r reports.Result
	r.Items = 5
	fillFromServer(&r, srv, 0)
	if r.Completed != 2 || r.Attempts != 5 || r.Throttled != 0 || r.Quota != 3 || len(r.ServerView.ThrottledBy) != 0 {
		t.Errorf("row: completed %d, attempts %d, 429s %d, quota %d, throttled by %v; want 2, 5, 0, 3, none",
			r.Completed, r.Attempts, r.Throttled, r.Quota, r.ServerView.ThrottledBy)
	}
}
