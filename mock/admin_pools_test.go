package mock

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// TestAdminLimitsByModel changes the per-model pools through the admin API
// between requests at one instant: a partial PUT changes one key of one
// pool and keeps its state, a new pattern is added, null removes one, and
// a refused body changes nothing.
func TestAdminLimitsByModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Latency.PerToken = 0
		cfg.LimitsByModel = map[string]Limits{"claude-sonnet-*": {RPM: 2}}
		ts := startServer(t, cfg)
		defer ts.stop()
		send := func(model string) string {
			r := ts.do(t, "POST", "/v1/messages", strings.Replace(anthropicBody(5, false, "hi"), "claude-sonnet-4-5", model, 1))
			return fmt.Sprintf("%d %s/%s", r.status, r.header.Get("Anthropic-Ratelimit-Requests-Remaining"), r.header.Get("Anthropic-Ratelimit-Requests-Limit"))
		}
		put := func(body string) string {
			r := ts.do(t, "PUT", "/_admin/limits_by_model", body)
			if r.status != 200 {
				return fmt.Sprintf("%d %s", r.status, r.json(t)["error"].(map[string]any)["message"])
			}
			return fmt.Sprintf("%d %s", r.status, compactJSON(t, r.body))
		}
		get := func() string { return compactJSON(t, ts.do(t, "GET", "/_admin/limits_by_model", "").body) }
		const sonnet2 = `"claude-sonnet-*":{"count_rejected":false,"itpm":0,"max_concurrent":0,"otpm":0,"retry_after":"0s","rpm":2,"tpm":0}`

		steps := []struct{ do, want string }{
			{"GET", `{` + sonnet2 + `}`},
			{"claude-sonnet-4-5", "200 1/2"},
			{"claude-sonnet-4-5", "200 0/2"},
			{"claude-sonnet-4-5", "429 0/2"},
			// Raised to 3: the pool's bucket keeps its level, empty, as
			// the key's buckets do when SetLimits raises a limit.
			{`PUT {"claude-sonnet-*": {"rpm": 3}}`, `200 {"claude-sonnet-*":{"count_rejected":false,"itpm":0,"max_concurrent":0,"otpm":0,"retry_after":"0s","rpm":3,"tpm":0}}`},
			{"claude-sonnet-4-5", "429 0/3"},
			{"claude-haiku-4-5", "200 /"},
			// A new pattern, in YAML; the other pool is left as it is.
			{"PUT claude-haiku-*: {rpm: 1}\n", `200 {"claude-haiku-*":{"count_rejected":false,"itpm":0,"max_concurrent":0,"otpm":0,"retry_after":"0s","rpm":1,"tpm":0},"claude-sonnet-*":{"count_rejected":false,"itpm":0,"max_concurrent":0,"otpm":0,"retry_after":"0s","rpm":3,"tpm":0}}`},
			{"claude-haiku-4-5", "200 0/1"},
			{"claude-haiku-4-5", "429 0/1"},
			// Refused bodies change nothing.
			{`PUT {"claude-haiku-*": {"rpm": -1}}`, `400 request body:1: limits_by_model.claude-haiku-*.rpm: must not be negative, got -1`},
			{`PUT {"[": {"rpm": 1}}`, `400 request body:1: limits_by_model.[: want a model pattern such as claude-sonnet-4-*, got "["`},
			{`PUT ["claude-*"]`, `400 request body:1: limits_by_model: want a mapping of model patterns to limits, got a list`},
			{`PUT {"claude-haiku-*": {"rmp": 1}}`, `400 request body:1: limits_by_model.claude-haiku-*.rmp: unknown key "rmp" (did you mean rpm?)`},
			{"GET", `{"claude-haiku-*":{"count_rejected":false,"itpm":0,"max_concurrent":0,"otpm":0,"retry_after":"0s","rpm":1,"tpm":0},"claude-sonnet-*":{"count_rejected":false,"itpm":0,"max_concurrent":0,"otpm":0,"retry_after":"0s","rpm":3,"tpm":0}}`},
			// null removes a pool: its model answers to the key's limits alone.
			{`PUT {"claude-haiku-*": null}`, `200 {` + strings.Replace(sonnet2, `"rpm":2`, `"rpm":3`, 1) + `}`},
			{"claude-haiku-4-5", "200 /"},
			{`PUT {}`, `200 {` + strings.Replace(sonnet2, `"rpm":2`, `"rpm":3`, 1) + `}`},
		}
		for i, st := range steps {
			var got string
			switch {
			case st.do == "GET":
				got = get()
			case strings.HasPrefix(st.do, "PUT "):
				got = put(strings.TrimPrefix(st.do, "PUT "))
			default:
				got = send(st.do)
			}
			if got != st.want {
				t.Errorf("step %d, %s:\n got %s\nwant %s", i, st.do, got, st.want)
			}
		}
	})
}
