package batch

import (
	"fmt"
	"hash/maphash"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"
)

// checkID reports why a batch id cannot be used, or "". The id is sent as
// every attempt's Idempotency-Key header, and net/http refuses to send a
// header value holding a control character (a newline, say): such an id
// would pass the input check and then fail every attempt, so it is refused
// with its line instead. httpguts is the check net/http itself applies when
// sending, so what passes here is exactly what can be sent.
//
// Deriving a header-safe key (a hash of the id) would accept such ids, but
// an id carrying a newline or a NUL is almost always a bug in whatever wrote
// the input, which a silent translation would hide.
func checkID(id string) string {
	if httpguts.ValidHeaderFieldValue(id) {
		return ""
	}
	i := strings.IndexFunc(id, func(r rune) bool { return !httpguts.ValidHeaderFieldValue(string(r)) })
	r, _ := utf8.DecodeRuneInString(id[max(i, 0):])
	return fmt.Sprintf("%q holds the control character %U at byte %d; ids are sent as the Idempotency-Key header, which cannot carry control characters", id, r, i)
}

// idKey identifies an id by two independent 64-bit hashes: a collision
// between two of a million ids has a probability near 10⁻²⁷, and an entry
// of the set costs the same few tens of bytes whatever the id's length.
type idKey [2]uint64

var idSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(id string) idKey {
	return idKey{maphash.String(idSeeds[0], id), maphash.String(idSeeds[1], id)}
}

// idState is what a batch knows of one id: the input line that carries it
// (0 when only the output has it) and whether the output holds it.
type idState struct {
	line int32
	done uint8
}

const (
	notDone uint8 = iota
	doneOK
	doneFailed
)
