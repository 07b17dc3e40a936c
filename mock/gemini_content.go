package mock

import (
	"strconv"
	"time"
)

// The GenerateContentResponse, whole (generateContent) and in chunks
// (streamGenerateContent?alt=sse, each chunk a GenerateContentResponse):
//
//	{"candidates": [{"content": {"parts": [{"text": …}], "role": "model"},
//	  "finishReason": "STOP", "index": 0}],
//	 "usageMetadata": {"promptTokenCount", "candidatesTokenCount",
//	  "totalTokenCount", "promptTokensDetails"},
//	 "modelVersion": …, "responseId": …}
//
// Vertex AI adds createTime and usageMetadata.trafficType. A function call
// is a functionCall part, {"name", "args"}, sent whole in one chunk.

// geminiFinish is a candidate's finishReason.
func geminiFinish(capped bool) string {
	if capped {
		return "MAX_TOKENS"
	}
	return "STOP"
}

func (g gemini) body(b []byte, c *call, r *result) ([]byte, error) {
	b = append(b, `{"candidates":[`...)
	out := r.n
	if c.content == nil {
		b = append(b, `{"content":{"parts":[{"text":"`...)
		b = appendText(b, r, 0, r.n)
		b = append(b, `"}],"role":"model"},"finishReason":"`...)
		b = append(b, geminiFinish(r.capped)...)
		b = append(b, `","index":0}`...)
	} else {
		cr := c.content
		for k := range cr.ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendGeminiCandidate(b, cr, k, r, 0, r.n, true)
		}
		out = cr.outputTokens(r)
	}
	b = append(b, ']')
	b = g.appendTail(b, c, r, out, true)
	return b, nil
}

// appendGeminiCandidate appends candidate k with its tokens [from, to);
// final adds its finishReason, and a function call, whole, when the
// candidate is one.
func appendGeminiCandidate(b []byte, cr *contentReq, k int, r *result, from, to int, final bool) []byte {
	ch := &cr.ans[k]
	b = append(b, `{"content":{"parts":[`...)
	switch {
	case ch.tool && final && ch.whole(r):
		b = append(b, `{"functionCall":{"name":`...)
		b = appendJSONString(b, cr.tools[cr.toolIdx].name)
		b = append(b, `,"args":`...)
		b = append(b, ch.doc...)
		b = append(b, `}}`...)
	case ch.tool:
		b = append(b, `{"text":""}`...)
	default:
		b = append(b, `{"text":"`...)
		b = ch.appendTokens(b, from, to)
		b = append(b, `"}`...)
	}
	b = append(b, `],"role":"model"}`...)
	if final {
		b = append(b, `,"finishReason":"`...)
		b = append(b, geminiFinish(ch.capped && ch.whole(r))...)
		b = append(b, '"')
	}
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(k), 10)
	return append(b, '}')
}

// appendTail appends usageMetadata (out output tokens; final: the counts
// of the whole answer), modelVersion, responseId and, on Vertex AI,
// createTime, and closes the response.
func (g gemini) appendTail(b []byte, c *call, r *result, out int, final bool) []byte {
	b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
	b = strconv.AppendInt(b, int64(c.input), 10)
	if final || out > 0 {
		b = append(b, `,"candidatesTokenCount":`...)
		b = strconv.AppendInt(b, int64(out), 10)
	}
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, int64(c.input+out), 10)
	if c.cacheRead > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = strconv.AppendInt(b, int64(c.cacheRead), 10)
	}
	if g.vertex {
		b = append(b, `,"trafficType":"ON_DEMAND"`...)
	}
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = strconv.AppendInt(b, int64(c.input), 10)
	b = append(b, `}]`...)
	if final && out > 0 {
		b = append(b, `,"candidatesTokensDetails":[{"modality":"TEXT","tokenCount":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		b = append(b, `}]`...)
	}
	b = append(b, `},"modelVersion":`...)
	b = appendJSONString(b, c.model)
	if g.vertex {
		b = append(b, `,"createTime":"`...)
		b = r.created.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"responseId":"`...)
	b = append(b, geminiResponseID(r.id)...)
	return append(b, `"}`...)
}

// geminiResponseID is the response id without the core's msg_ prefix:
// Google's are bare base64url strings.
func geminiResponseID(id string) string {
	if len(id) > 4 && id[:4] == "msg_" {
		return id[4:]
	}
	return id
}

// geminiSSE appends one chunk's frame; Google ends each with CRLF CRLF.
func geminiSSEStart(b []byte) []byte { return append(b, "data: "...) }
func geminiSSEEnd(b []byte) []byte   { return append(b, "\r\n\r\n"...) }

// streamStart sends nothing: the first chunk carries the first tokens.
func (gemini) streamStart(b []byte, _ *call, _ *result) []byte { return b }

func (g gemini) streamDelta(b []byte, c *call, r *result, from, to int) []byte {
	cr := c.content
	if cr != nil && cr.ans[0].tool {
		return b // a function call goes out whole, in the last chunk
	}
	b = geminiSSEStart(b)
	b = append(b, `{"candidates":[`...)
	out := to
	if cr == nil {
		b = append(b, `{"content":{"parts":[{"text":"`...)
		b = appendText(b, r, from, to)
		b = append(b, `"}],"role":"model"},"index":0}`...)
	} else {
		out = 0
		for k := range cr.ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendGeminiCandidate(b, cr, k, r, from, to, false)
			out += min(cr.ans[k].n, to)
		}
	}
	b = append(b, ']')
	b = g.appendTail(b, c, r, out, false)
	return geminiSSEEnd(b)
}

func (g gemini) streamEnd(b []byte, c *call, r *result) []byte {
	b = geminiSSEStart(b)
	b = append(b, `{"candidates":[`...)
	out := r.n
	if cr := c.content; cr == nil {
		b = append(b, `{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"`...)
		b = append(b, geminiFinish(r.capped)...)
		b = append(b, `","index":0}`...)
	} else {
		for k := range cr.ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendGeminiCandidate(b, cr, k, r, 0, 0, true)
		}
		out = cr.outputTokens(r)
	}
	b = append(b, ']')
	b = g.appendTail(b, c, r, out, true)
	return geminiSSEEnd(b)
}

// streamError is the error chunk Google sends when a stream fails after
// its 200: the google.rpc.Status envelope as a data frame.
func (gemini) streamError(b []byte, _ *call, _ *result) []byte {
	b = geminiSSEStart(b)
	b = append(b, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`...)
	return geminiSSEEnd(b)
}
