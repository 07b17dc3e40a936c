package ssetext

import (
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	ev := func(text string) string {
		return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text + "\"}}\n\n"
	}
	stream := "event: message_start\ndata: {}\n\n" + ev("the ") + ev("lab mock") + "event: message_stop\ndata: {}\n\n"
	chars, events, full := Read(strings.NewReader(stream), 12)
	if chars != 12 || events != 2 || full.IsZero() {
		t.Errorf("Read = %d chars, %d events, full %v; want 12, 2, a time", chars, events, full)
	}
	if _, _, full := Read(strings.NewReader(stream), 13); !full.IsZero() {
		t.Errorf("want 13 of 12 characters: full = %v, want zero", full)
	}
}
