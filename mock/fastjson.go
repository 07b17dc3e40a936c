package mock

import (
	"encoding/json"
	"unicode/utf8"
)

// The fast decoders below read the common request shapes without
// reflection: they walk a body that json.Valid accepted and fill the same
// anthropicRequest / openaiRequest that encoding/json would. Whenever a body
// needs anything encoding/json does that they do not (an escaped or
// case-folded key, a duplicate field, a value of an unexpected type, an
// escaped model or role, stream_options), they return false and the caller
// decodes with encoding/json, so errors and edge cases keep their exact
// behaviour.

// skipWS returns the index of the first non-space byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just after the value starting at b[i], in
// valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// jsonIter walks the members of an object or the elements of an array of
// valid JSON.
type jsonIter struct {
	b []byte
	i int
}

// member returns the next member's raw key (without quotes) and value; ok is
// false after the last.
func (it *jsonIter) member() (key, val []byte, ok bool) {
	b := it.b
	i := skipWS(b, it.i)
	if b[i] == ',' {
		i = skipWS(b, i+1)
	}
	if b[i] == '}' {
		it.i = i + 1
		return nil, nil, false
	}
	ke := skipString(b, i)
	key = b[i+1 : ke-1]
	i = skipWS(b, ke)  // at ':'
	i = skipWS(b, i+1) // at the value
	ve := skipValue(b, i)
	it.i = ve
	return key, b[i:ve], true
}

// element returns the next element of an array; ok is false after the last.
func (it *jsonIter) element() (val []byte, ok bool) {
	b := it.b
	i := skipWS(b, it.i)
	if b[i] == ',' {
		i = skipWS(b, i+1)
	}
	if b[i] == ']' {
		it.i = i + 1
		return nil, false
	}
	ve := skipValue(b, i)
	it.i = ve
	return b[i:ve], true
}

// plainKey reports whether a raw key is what encoding/json would match by
// its bytes alone: no escapes, ASCII.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// foldsTo reports whether the ASCII key k equals one of names ignoring case,
// as encoding/json's case-insensitive field match would find it.
func foldsTo(k []byte, names ...string) bool {
	for _, n := range names {
		if len(k) != len(n) {
			continue
		}
		eq := true
		for i := range k {
			c := k[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != n[i] {
				eq = false
				break
			}
		}
		if eq {
			return true
		}
	}
	return false
}

// isNull reports whether a raw value is the literal null.
func isNull(v []byte) bool { return string(v) == "null" }

// plainString returns the contents of a JSON string literal that holds no
// escapes and only valid UTF-8, which encoding/json would decode to exactly
// these bytes.
func plainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	s := v[1 : len(v)-1]
	for _, c := range s {
		if c == '\\' {
			return nil, false
		}
	}
	if !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}

// fastInt parses a JSON number as encoding/json would into an int64, for
// the integers it would accept; false for anything else.
func fastInt(v []byte) (int64, bool) {
	neg := false
	if len(v) > 0 && v[0] == '-' {
		neg, v = true, v[1:]
	}
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// fastBool parses true or false.
func fastBool(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// internRole returns role as a string, without allocating for the roles of
// either API.
func internRole(r []byte) string {
	switch string(r) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "system":
		return "system"
	case "developer":
		return "developer"
	case "tool":
		return "tool"
	case "function":
		return "function"
	}
	return string(r)
}

// fastObject checks that body is valid JSON holding an object and returns an
// iterator over its members.
func fastObject(body []byte) (jsonIter, bool) {
	if !json.Valid(body) {
		return jsonIter{}, false
	}
	i := skipWS(body, 0)
	if body[i] != '{' {
		return jsonIter{}, false
	}
	return jsonIter{b: body, i: i + 1}, true
}

// fastMessages decodes the messages array (or null) like encoding/json into
// []message.
func fastMessages(v []byte) ([]message, bool) {
	if isNull(v) {
		return nil, true
	}
	if v[0] != '[' {
		return nil, false
	}
	msgs := make([]message, 0, 4)
	it := jsonIter{b: v, i: 1}
	for {
		e, ok := it.element()
		if !ok {
			return msgs, true
		}
		if e[0] != '{' {
			return nil, false
		}
		var m message
		var seen uint8
		mi := jsonIter{b: e, i: 1}
		for {
			k, val, ok := mi.member()
			if !ok {
				break
			}
			if !plainKey(k) {
				return nil, false
			}
			switch string(k) {
			case "role":
				if seen&1 != 0 {
					return nil, false
				}
				seen |= 1
				if isNull(val) {
					continue
				}
				s, ok := plainString(val)
				if !ok {
					return nil, false
				}
				m.Role = internRole(s)
			case "content":
				if seen&2 != 0 {
					return nil, false
				}
				seen |= 2
				m.Content = val
			default:
				if foldsTo(k, "role", "content") {
					return nil, false
				}
			}
		}
		msgs = append(msgs, m)
	}
}

// fields records which fields a body has set: a repeated field goes to
// encoding/json, whose rule for duplicates the fast path does not copy.
type fields uint16

// first marks bit, and reports whether it was not marked yet.
func (f *fields) first(bit fields) bool {
	if *f&bit != 0 {
		return false
	}
	*f |= bit
	return true
}

// setString, setInt and setBool store a plain JSON value in *p as
// encoding/json would (null leaves *p alone), and report false for a value
// only encoding/json can decode.
func setString(p *string, v []byte) bool {
	if isNull(v) {
		return true
	}
	s, ok := plainString(v)
	if ok {
		*p = string(s)
	}
	return ok
}

func setInt(p *int64, v []byte) bool {
	if isNull(v) {
		return true
	}
	n, ok := fastInt(v)
	if ok {
		*p = n
	}
	return ok
}

func setBool(p *bool, v []byte) bool {
	if isNull(v) {
		return true
	}
	b, ok := fastBool(v)
	if ok {
		*p = b
	}
	return ok
}

// setRaw keeps v, a field encoding/json would store as a json.RawMessage,
// null included.
func setRaw(p *json.RawMessage, v []byte) bool {
	*p = v
	return true
}

func setMessages(p *[]message, v []byte) bool {
	m, ok := fastMessages(v)
	if ok {
		*p = m
	}
	return ok
}

// fastDecode fills req from body like json.Unmarshal, or returns false when
// encoding/json must do it.
func (req *anthropicRequest) fastDecode(body []byte) bool {
	it, ok := fastObject(body)
	if !ok {
		return false
	}
	var seen fields
	for {
		k, v, ok := it.member()
		if !ok {
			return true
		}
		if !plainKey(k) {
			return false
		}
		switch string(k) {
		case "model":
			ok = seen.first(1) && setString(&req.Model, v)
		case "max_tokens":
			ok = seen.first(2) && setInt(&req.MaxTokens, v)
		case "messages":
			ok = seen.first(4) && setMessages(&req.Messages, v)
		case "system":
			ok = seen.first(8) && setRaw(&req.System, v)
		case "tools":
			ok = seen.first(16) && setRaw(&req.Tools, v)
		case "stream":
			ok = seen.first(32) && setBool(&req.Stream, v)
		case "tool_choice":
			ok = seen.first(64) && setRaw(&req.ToolChoice, v)
		case "output_config":
			ok = seen.first(128) && setRaw(&req.OutputConfig, v)
		case "output_format":
			ok = seen.first(256) && setRaw(&req.OutputFormat, v)
		case "temperature":
			ok = seen.first(512) && setRaw(&req.Temperature, v)
		case "top_p":
			ok = seen.first(1024) && setRaw(&req.TopP, v)
		default:
			// stop_sequences goes to encoding/json.
			ok = !foldsTo(k, "model", "max_tokens", "messages", "system", "tools", "stream",
				"tool_choice", "output_config", "output_format", "stop_sequences", "temperature", "top_p")
		}
		if !ok {
			return false
		}
	}
}

// fastDecode fills req from body like json.Unmarshal, or returns false when
// encoding/json must do it. A body with stream_options other than null goes
// to encoding/json.
func (req *openaiRequest) fastDecode(body []byte) bool {
	it, ok := fastObject(body)
	if !ok {
		return false
	}
	var seen fields
	for {
		k, v, ok := it.member()
		if !ok {
			return true
		}
		if !plainKey(k) {
			return false
		}
		switch string(k) {
		case "model":
			ok = seen.first(1) && setString(&req.Model, v)
		case "max_tokens":
			ok = seen.first(2) && setInt(&req.MaxTokens, v)
		case "max_completion_tokens":
			ok = seen.first(4) && setInt(&req.MaxCompletionTokens, v)
		case "messages":
			ok = seen.first(8) && setMessages(&req.Messages, v)
		case "tools":
			ok = seen.first(16) && setRaw(&req.Tools, v)
		case "stream":
			ok = seen.first(32) && setBool(&req.Stream, v)
		case "stream_options":
			ok = isNull(v) && seen.first(64)
		case "tool_choice":
			ok = seen.first(128) && setRaw(&req.ToolChoice, v)
		case "response_format":
			ok = seen.first(256) && setRaw(&req.ResponseFormat, v)
		case "stop":
			ok = seen.first(512) && setRaw(&req.Stop, v)
		case "temperature":
			ok = seen.first(1024) && setRaw(&req.Temperature, v)
		case "top_p":
			ok = seen.first(2048) && setRaw(&req.TopP, v)
		default:
			// n, logprobs and top_logprobs go to encoding/json.
			ok = !foldsTo(k, "model", "messages", "max_completion_tokens", "max_tokens", "stream", "stream_options", "tools",
				"tool_choice", "response_format", "stop", "n", "logprobs", "top_logprobs", "temperature", "top_p")
		}
		if !ok {
			return false
		}
	}
}
