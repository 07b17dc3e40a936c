package provider

import (
	"os"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/strategies"
)

func FuzzSSEReader(f *testing.F) {
	for _, name := range []string{"anthropic_basic_stream.txt", "anthropic_error_stream.txt", "openai_stream.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: a\r\ndata: b\r\r:c\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewSSEReader(strings.NewReader(string(in)))
		for n := 0; ; n++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if n > len(in) {
				t.Fatalf("more events (%d) than input bytes (%d)", n, len(in))
			}
			if strings.ContainsAny(ev.Event, "\r\n") {
				t.Fatalf("event name %q holds a line break", ev.Event)
			}
		}
		// The decoders built on the reader must not panic on any stream.
		for _, p := range []Provider{Anthropic{}, OpenAI{}} {
			resp := sseResponse(string(in))
			p.Decode(resp, t0)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, name := range []string{"anthropic_message.json", "openai_completion.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(200, b)
	}
	f.Add(429, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`))
	f.Add(400, []byte(`{"error":{"message":"m","type":null,"code":42}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			return
		}
		for _, p := range []Provider{Anthropic{}, OpenAI{}} {
			_, o := p.Decode(jsonResponse(status, string(body)), t0)
			if o.Status != status || (o.Kind == strategies.Success) != (o.Err == nil) {
				t.Fatalf("%s: Decode(%d, %q) = %v %d %v", p.Name(), status, body, o.Kind, o.Status, o.Err)
			}
		}
	})
}
