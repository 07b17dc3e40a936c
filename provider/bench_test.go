package provider

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// go test -run '^$' -bench . -benchmem ./provider/
func BenchmarkNewRequest(b *testing.B) {
	r := testRequest(false)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Anthropic{}).NewRequest(ctx, "http://h", "k", r, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeJSON(b *testing.B) {
	body, err := io.ReadAll(strings.NewReader(string(mustRead(b, "testdata/anthropic_message.json"))))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		resp := jsonResponse(200, string(body))
		resp.ContentLength = int64(len(body))
		Anthropic{}.Decode(resp, time.Now())
	}
}

func BenchmarkDecodeStream(b *testing.B) {
	body := string(mustRead(b, "testdata/anthropic_basic_stream.txt"))
	b.ReportAllocs()
	for b.Loop() {
		Anthropic{}.Decode(sseResponse(body), time.Now())
	}
}

func mustRead(b *testing.B, name string) []byte {
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
