// Package eventstream writes the binary framing of
// application/vnd.amazon.eventstream, which Bedrock Runtime's streaming
// operations answer with (docs/bedrock.md: Event stream framing, with the SDK
// source each fact is checked against). A message is
//
//	total length    uint32, big-endian: the whole message, these 4 bytes and the final CRC included
//	headers length  uint32, big-endian
//	prelude CRC     uint32: CRC-32 (IEEE) of the 8 bytes above
//	headers         each: name length uint8, name, value type uint8, value
//	payload         the event's JSON
//	message CRC     uint32: CRC-32 (IEEE) of everything before it, the prelude CRC included
//
// It writes string headers only (value type 7: length uint16, bytes), the
// one type the Bedrock event and exception messages carry.
package eventstream

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// headerString is value type 7 of an eventstream header.
const headerString = 7

// Header is one string header of an eventstream message.
type Header struct{ Name, Value string }

// AppendMessage appends one eventstream message whose headers are hs
// and whose payload is appended by payload (called once, on b).
func AppendMessage(b []byte, hs []Header, payload func([]byte) []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, 12)...) // the prelude and its CRC, filled in below
	for _, h := range hs {
		b = append(b, byte(len(h.Name)))
		b = append(b, h.Name...)
		b = append(b, headerString)
		b = binary.BigEndian.AppendUint16(b, uint16(len(h.Value)))
		b = append(b, h.Value...)
	}
	headersLen := len(b) - start - 12
	b = payload(b)
	total := len(b) - start + 4
	binary.BigEndian.PutUint32(b[start:], uint32(total))
	binary.BigEndian.PutUint32(b[start+4:], uint32(headersLen))
	binary.BigEndian.PutUint32(b[start+8:], crc32.ChecksumIEEE(b[start:start+8]))
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

// AppendEvent appends an event message of type eventType whose payload is
// the JSON appended by payload.
func AppendEvent(b []byte, eventType string, payload func([]byte) []byte) []byte {
	return AppendMessage(b, []Header{
		{":event-type", eventType},
		{":content-type", "application/json"},
		{":message-type", "event"},
	}, payload)
}

// AppendException appends an exception message: exceptionType is the
// stream union's member (throttlingException, serviceUnavailableException,
// …), the payload {"message": msg}.
func AppendException(b []byte, exceptionType, msg string) []byte {
	return AppendMessage(b, []Header{
		{":exception-type", exceptionType},
		{":content-type", "application/json"},
		{":message-type", "exception"},
	}, func(b []byte) []byte {
		b = append(b, `{"message":`...)
		b = wire.AppendJSONString(b, msg)
		return append(b, '}')
	})
}
