package mock_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// Example serves the mock on a loopback port with a limit of one request in
// flight per key: while a long response is streaming, a second request
// gets a 429 naming the limit, with retry-after.
func Example() {
	cfg := mock.DefaultConfig()
	cfg.Limits.MaxConcurrent = 1
	cfg.Limits.RetryAfter = 2 * time.Second
	srv, err := mock.New(cfg)
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/v1/messages"

	post := func(maxTokens int) *http.Response {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, maxTokens)
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Anthropic-Version", "2023-06-01") // required, as by the real API
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	long := post(1000) // 5 s of tokens; its headers arrive at once
	defer long.Body.Close()

	second := post(10)
	msg, _ := io.ReadAll(second.Body)
	second.Body.Close()
	fmt.Println(second.StatusCode, second.Header.Get("Retry-After"))
	fmt.Println(strings.Contains(string(msg), "max_concurrent"))
	// Output:
	// 429 2
	// true
}

// ExampleParseConfig reads the YAML schema; keys left out keep their
// defaults, and errors name the file, line and key.
func ExampleParseConfig() {
	cfg, err := mock.ParseConfig([]byte(`
limits:
  max_concurrent: 20
  retry_after: 1s
output:
  tokens: {uniform: [20, 80]}
`), "mock.yaml")
	fmt.Println(cfg.Limits.MaxConcurrent, cfg.Limits.RetryAfter, cfg.Latency.PerToken, cfg.Output.Tokens, err)

	_, err = mock.ParseConfig([]byte("limits:\n  max_concurent: 20\n"), "mock.yaml")
	fmt.Println(err)
	// Output:
	// 20 1s 5ms {uniform: [20, 80]} <nil>
	// mock.yaml:2: limits.max_concurent: unknown key "max_concurent" (did you mean max_concurrent?)
}
