package wire

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []SSEEvent
		wantErr error
	}{
		{"empty", "", nil, io.EOF},
		{"one", "event: a\ndata: {}\n\n", []SSEEvent{{"a", []byte("{}")}}, io.EOF},
		{"data only", "data: x\n\ndata: y\n\n", []SSEEvent{{"", []byte("x")}, {"", []byte("y")}}, io.EOF},
		{"crlf", "event: a\r\ndata: 1\r\n\r\n", []SSEEvent{{"a", []byte("1")}}, io.EOF},
		{"cr", "event: a\rdata: 1\r\r", []SSEEvent{{"a", []byte("1")}}, io.EOF},
		{"no space", "event:a\ndata:1\n\n", []SSEEvent{{"a", []byte("1")}}, io.EOF},
		{"two spaces keep one", "data:  1\n\n", []SSEEvent{{"", []byte(" 1")}}, io.EOF},
		{"multi data", "data: a\ndata: b\n\n", []SSEEvent{{"", []byte("a\nb")}}, io.EOF},
		{"comments", ": keepalive\n\n:x\ndata: 1\n\n", []SSEEvent{{"", []byte("1")}}, io.EOF},
		{"event without data is dropped", "event: a\n\ndata: 1\n\n", []SSEEvent{{"", []byte("1")}}, io.EOF},
		{"ignored fields", "id: 7\nretry: 10\ndata: 1\n\n", []SSEEvent{{"", []byte("1")}}, io.EOF},
		{"cut inside event", "data: 1\n\ndata: 2\n", []SSEEvent{{"", []byte("1")}}, io.ErrUnexpectedEOF},
		{"cut inside line", "data: 1\n\ndata: 2", []SSEEvent{{"", []byte("1")}}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewSSEReader(strings.NewReader(tt.in))
			var got []SSEEvent
			var err error
			for {
				var ev SSEEvent
				if ev, err = r.Next(); err != nil {
					break
				}
				got = append(got, SSEEvent{ev.Event, append([]byte(nil), ev.Data...)})
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
	if _, err := r.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("Next on an endless line: error = %v, want %v", err, ErrLineTooLong)
	}
}
