package loadgen

import (
	"net/http"
	"sync"
	"testing"

	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// TestTargetKey: against a target, the key sent is the one read from
// target.api_key_env, and none without it; request.api_key (the embedded
// mock's test key) never goes to a target.
func TestTargetKey(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.Latency.PerToken = 0
	var (
		mu   sync.Mutex
		keys = map[string]int{}
	)
	ts := mocktest.Start(t, cfg, mocktest.Wrap(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			keys[r.Header.Get("X-Api-Key")]++
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}))
	for _, tt := range []struct {
		name, target, want string
	}{
		{"no api_key_env", `{url: "` + ts.URL + `"}`, ""},
		{"api_key_env", `{url: "` + ts.URL + `", api_key_env: K}`, "from-env"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clear(keys)
			s, err := Parse("t.yaml", []byte("items: 3\nrequest: {max_tokens: 3, api_key: test-only}\ntarget: "+tt.target+
				"\nstrategies: [{name: s, kind: semaphore, n: 1, max_retries: 0}]\n"))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(t.Context(), s, Options{Getenv: func(string) string { return "from-env" }})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Results[0]; r.Completed != 3 {
				t.Errorf("completed %d of 3", r.Completed)
			}
			if len(keys) != 1 || keys[tt.want] != 3 {
				t.Errorf("keys sent = %v, want %q on all 3 requests", keys, tt.want)
			}
		})
	}
}
