package mock

import (
	"net/http"
	"strconv"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// newID returns a fresh id with prefix: 22 base62 characters derived from
// the seed and a counter by splitmix64, a bijection, so ids are unique within
// a server and the same from run to run.
func (s *Server) newID(prefix string) string {
	var space [48]byte
	return string(s.appendID(space[:0], prefix, s.seq.Add(1)))
}

// appendID appends the id with prefix of counter value n, as newID makes
// it: a caller that takes n at the moment newID would have can format the
// id later, with other values, in one allocation.
func (s *Server) appendID(b []byte, prefix string, n uint64) []byte {
	x := splitmix64(uint64(s.cfg.Seed) + n)
	b = append(b, prefix...)
	b = append(b, "01"...)
	b = appendBase62(b, x, 11)
	return appendBase62(b, splitmix64(x), 11)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func appendBase62(b []byte, x uint64, width int) []byte {
	var tmp [11]byte
	for i := width - 1; i >= 0; i-- {
		tmp[i] = base62[x%62]
		x /= 62
	}
	return append(b, tmp[:width]...)
}

// attemptIndex is X-Stainless-Retry-Count, or -1 when absent or invalid;
// or what wr's wire.Spec.AttemptIndex reads.
func attemptIndex(req *http.Request, wr wire.Format) int {
	if f := wr.Spec().AttemptIndex; f != nil {
		return f(req)
	}
	v := req.Header.Get("X-Stainless-Retry-Count")
	if v == "" {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
