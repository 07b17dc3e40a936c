package eventstream

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// TestFramesDecode: aws-sdk-go-v2's decoder, which checks both lengths and
// both CRCs, reads back the headers and payloads of an event and an
// exception written one after the other, and refuses a flipped payload byte.
func TestFramesDecode(t *testing.T) {
	b := AppendEvent(nil, "contentBlockDelta", func(p []byte) []byte {
		return append(p, `{"delta":{"text":"hé"}}`...)
	})
	first := len(b)
	b = AppendException(b, "throttlingException", `slow "down"`)

	want := []struct {
		headers map[string]string
		payload string
	}{
		{map[string]string{":event-type": "contentBlockDelta", ":content-type": "application/json", ":message-type": "event"}, `{"delta":{"text":"hé"}}`},
		{map[string]string{":exception-type": "throttlingException", ":content-type": "application/json", ":message-type": "exception"}, `{"message":"slow \"down\""}`},
	}
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(b)
	for i, w := range want {
		m, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if len(m.Headers) != len(w.headers) {
			t.Errorf("message %d: %d headers, want %d", i, len(m.Headers), len(w.headers))
		}
		for _, h := range m.Headers {
			if got := h.Value.String(); got != w.headers[h.Name] {
				t.Errorf("message %d: header %s = %q, want %q", i, h.Name, got, w.headers[h.Name])
			}
		}
		if string(m.Payload) != w.payload {
			t.Errorf("message %d: payload %q, want %q", i, m.Payload, w.payload)
		}
	}
	if r.Len() != 0 {
		t.Errorf("%d bytes after the last message", r.Len())
	}

	bad := bytes.Clone(b[:first])
	bad[len(bad)-6] ^= 1 // a payload byte: the message CRC no longer matches
	if _, err := eventstream.NewDecoder().Decode(bytes.NewReader(bad), nil); err == nil {
		t.Error("a message with a flipped payload byte decoded without error")
	}
}
