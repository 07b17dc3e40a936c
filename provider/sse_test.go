package provider

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/strategies"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{"empty", "", nil, io.EOF},
		{"one", "event: a\ndata: {}\n\n", []Event{{"a", []byte("{}")}}, io.EOF},
		{"data only", "data: x\n\ndata: y\n\n", []Event{{"", []byte("x")}, {"", []byte("y")}}, io.EOF},
		{"crlf", "event: a\r\ndata: 1\r\n\r\n", []Event{{"a", []byte("1")}}, io.EOF},
		{"cr", "event: a\rdata: 1\r\r", []Event{{"a", []byte("1")}}, io.EOF},
		{"no space", "event:a\ndata:1\n\n", []Event{{"a", []byte("1")}}, io.EOF},
		{"two spaces keep one", "data:  1\n\n", []Event{{"", []byte(" 1")}}, io.EOF},
		{"multi data", "data: a\ndata: b\n\n", []Event{{"", []byte("a\nb")}}, io.EOF},
		{"comments", ": keepalive\n\n:x\ndata: 1\n\n", []Event{{"", []byte("1")}}, io.EOF},
		{"event without data is dropped", "event: a\n\ndata: 1\n\n", []Event{{"", []byte("1")}}, io.EOF},
		{"ignored fields", "id: 7\nretry: 10\ndata: 1\n\n", []Event{{"", []byte("1")}}, io.EOF},
		{"cut inside event", "data: 1\n\ndata: 2\n", []Event{{"", []byte("1")}}, io.ErrUnexpectedEOF},
		{"cut inside line", "data: 1\n\ndata: 2", []Event{{"", []byte("1")}}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.in))
			var got []Event
			var err error
			for {
				var ev Event
				if ev, err = r.Next(); err != nil {
					break
				}
				got = append(got, Event{ev.Event, append([]byte(nil), ev.Data...)})
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Next error = %v, want %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("events = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i].Event != tt.want[i].Event || string(got[i].Data) != string(tt.want[i].Data) {
					t.Errorf("event %d = %q/%q, want %q/%q", i, got[i].Event, got[i].Data, tt.want[i].Event, tt.want[i].Data)
				}
			}
		})
	}
}

func TestSSEReaderLineTooLong(t *testing.T) {
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: "), strings.NewReader(strings.Repeat("x", MaxSSELine+1))))
	if _, err := r.Next(); !errors.Is(err, errLineTooLong) {
		t.Errorf("Next on an endless line: error = %v, want %v", err, errLineTooLong)
	}
}

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
