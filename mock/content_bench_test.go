package mock_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/mock"
)

// schema20 is an extraction tool's input: 20 properties, with enums,
// formats, bounds, a nested array of objects and a nullable field.
const schema20 = `{"type":"object","additionalProperties":false,"required":["invoice_id","vendor","customer","issued","due","currency","subtotal","tax","total","paid","status","lines","notes","email","website","po_number","country","priority","tags","confidence"],"properties":{` +
	`"invoice_id":{"type":"string"},"vendor":{"type":"string"},"customer":{"type":"string"},` +
	`"issued":{"type":"string","format":"date"},"due":{"type":"string","format":"date"},` +
	`"currency":{"type":"string","enum":["EUR","USD","GBP"]},"subtotal":{"type":"number","minimum":0},` +
	`"tax":{"type":"number","minimum":0},"total":{"type":"number","minimum":0},"paid":{"type":"boolean"},` +
	`"status":{"type":"string","enum":["draft","sent","paid","void"]},` +
	`"lines":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}},` +
	`"notes":{"type":["string","null"]},"email":{"type":"string","format":"email"},"website":{"type":"string","format":"uri"},` +
	`"po_number":{"type":"string","maxLength":12},"country":{"type":"string","minLength":2,"maxLength":2},` +
	`"priority":{"type":"integer","minimum":1,"maximum":5},"tags":{"type":"array","items":{"type":"string"}},` +
	`"confidence":{"type":"number","minimum":0,"maximum":1}}}`

// BenchmarkToolCall compares a forced tool call with a 20-property schema
// (request decoding, schema lookup, generation, response) with a plain text
// answer of the same number of output tokens, on the same zero-latency mock
// over loopback, interleaved, clients included. ratio_tool_vs_text is the
// tool call's time per request over the plain text answer's (target ≤ 2);
// ratio_tool_vs_same_request compares it with the same request, tools and
// all, answered with text (tool_choice none), which isolates the cost of
// generating the call from that of sending a 2.4 KB schema with every
// request.
func BenchmarkToolCall(b *testing.B) {
	const (
		perRound = 250
		rounds   = 16
	)
	for _, api := range []string{"anthropic", "openai"} {
		b.Run(api, func(b *testing.B) {
			b.ReportAllocs()
			url, _, stop := startMockTCP(b, `
seed: 1
latency: {ttft: 0s, ttft_per_input_token: 0s, per_token: 0s}
`)
			defer stop()
			var tool benchTarget
			if api == "anthropic" {
				tool = benchTarget{name: "tool", path: "/v1/messages",
					body: `{"model":"` + benchModel + `","max_tokens":1024,"messages":[{"role":"user","content":"Extract the invoice."}],` +
						`"tools":[{"name":"record_invoice","description":"Record the invoice's fields.","input_schema":` + schema20 + `}],"tool_choice":{"type":"any"}}`,
					hdr: map[string]string{"anthropic-version": "2023-06-01"}}
			} else {
				tool = benchTarget{name: "tool", path: "/v1/chat/completions",
					body: `{"model":"gpt-4o-mini","max_completion_tokens":1024,"messages":[{"role":"user","content":"Extract the invoice."}],` +
						`"tools":[{"type":"function","function":{"name":"record_invoice","strict":true,"parameters":` + schema20 + `}}],"tool_choice":"required"}`}
			}
			status, _, body := captureResponse(b, url+tool.path, tool)
			if status != http.StatusOK {
				b.Fatalf("tool call: %d %s", status, body)
			}
			var resp struct {
				Usage struct {
					OutputTokens     int `json:"output_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &resp); err != nil {
				b.Fatal(err)
			}
			n := resp.Usage.OutputTokens + resp.Usage.CompletionTokens
			text := tool
			text.name = "text"
			if api == "anthropic" {
				text.body = `{"model":"` + benchModel + `","max_tokens":` + strconv.Itoa(n) + `,"messages":[{"role":"user","content":"Extract the invoice."}]}`
			} else {
				text.body = `{"model":"gpt-4o-mini","max_completion_tokens":` + strconv.Itoa(n) + `,"messages":[{"role":"user","content":"Extract the invoice."}]}`
			}
			same := tool
			same.name = "same"
			if api == "anthropic" {
				same.body = strings.Replace(tool.body, `"max_tokens":1024`, `"max_tokens":`+strconv.Itoa(n), 1)
				same.body = strings.Replace(same.body, `{"type":"any"}`, `{"type":"none"}`, 1)
			} else {
				same.body = strings.Replace(tool.body, `"max_completion_tokens":1024`, `"max_completion_tokens":`+strconv.Itoa(n), 1)
				same.body = strings.Replace(same.body, `"required"`, `"none"`, 1)
			}
			c := newBenchClient()
			defer c.CloseIdleConnections()
			hammer(b, c, url+tool.path, tool, perRound)
			hammer(b, c, url+text.path, text, perRound)
			hammer(b, c, url+same.path, same, perRound)
			var lt, lx, ls load
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for r := 0; r < rounds; r++ {
					if (i+r)%2 == 0 {
						lt.add(hammer(b, c, url+tool.path, tool, perRound))
						lx.add(hammer(b, c, url+text.path, text, perRound))
						ls.add(hammer(b, c, url+same.path, same, perRound))
					} else {
						ls.add(hammer(b, c, url+same.path, same, perRound))
						lx.add(hammer(b, c, url+text.path, text, perRound))
						lt.add(hammer(b, c, url+tool.path, tool, perRound))
					}
				}
			}
			b.StopTimer()
			reqs := float64(b.N * rounds * perRound)
			b.ReportMetric(float64(n), "output_tokens")
			b.ReportMetric(lt.took.Seconds()/reqs*1e6, "tool_µs/req")
			b.ReportMetric(lx.took.Seconds()/reqs*1e6, "text_µs/req")
			b.ReportMetric(lt.took.Seconds()/lx.took.Seconds(), "ratio_tool_vs_text")
			b.ReportMetric(lt.took.Seconds()/ls.took.Seconds(), "ratio_tool_vs_same_request")
		})
	}
}

// BenchmarkToolCallHandler is BenchmarkToolCall without the network and
// the clients: the mock's handler called directly, requests alternating
// between the tool call, the plain text answer of the same length and the
// same request answered with text. It is the server's own cost, and less
// noisy on a loaded machine.
func BenchmarkToolCallHandler(b *testing.B) {
	for _, api := range []string{"anthropic", "openai"} {
		b.Run(api, func(b *testing.B) {
			cfg, err := mock.ParseConfig([]byte("seed: 1\nlatency: {per_token: 0s}\n"), "bench.yaml")
			if err != nil {
				b.Fatal(err)
			}
			s, err := mock.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			h := s.Handler()
			path, tool, max := "/v1/messages", `{"model":"`+benchModel+`","max_tokens":1024,"messages":[{"role":"user","content":"Extract the invoice."}],`+
				`"tools":[{"name":"record_invoice","input_schema":`+schema20+`}],"tool_choice":{"type":"any"}}`, `"max_tokens":`
			none := `{"type":"none"}`
			forced := `{"type":"any"}`
			if api == "openai" {
				path, tool, max = "/v1/chat/completions", `{"model":"gpt-4o-mini","max_completion_tokens":1024,"messages":[{"role":"user","content":"Extract the invoice."}],`+
					`"tools":[{"type":"function","function":{"name":"record_invoice","parameters":`+schema20+`}}],"tool_choice":"required"}`, `"max_completion_tokens":`
				none, forced = `"none"`, `"required"`
			}
			do := func(body string) []byte {
				req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
				req.Header.Set("anthropic-version", "2023-06-01")
				req.Header.Set("content-type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				return rec.Body.Bytes()
			}
			var resp struct {
				Usage struct {
					OutputTokens     int `json:"output_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(do(tool), &resp); err != nil {
				b.Fatal(err)
			}
			n := strconv.Itoa(resp.Usage.OutputTokens + resp.Usage.CompletionTokens)
			same := strings.Replace(strings.Replace(tool, max+"1024", max+n, 1), forced, none, 1)
			model := benchModel
			if api == "openai" {
				model = "gpt-4o-mini"
			}
			text := `{"model":"` + model + `",` + max + n + `,"messages":[{"role":"user","content":"Extract the invoice."}]}`
			bodies := []string{tool, text, same}
			var took [3]time.Duration
			b.ReportAllocs()
			for b.Loop() {
				for i, body := range bodies {
					start := time.Now()
					do(body)
					took[i] += time.Since(start)
				}
			}
			b.ReportMetric(float64(took[0])/float64(took[1]), "ratio_tool_vs_text")
			b.ReportMetric(float64(took[0])/float64(took[2]), "ratio_tool_vs_same_request")
			b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "tool_µs/req")
			b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "text_µs/req")
		})
	}
}
