package gemini

import (
	"strconv"
	"time"

	"github.com/ratelab/ratelab/mock/internal/wire"
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

func (g Format) Body(b []byte, c *wire.Call, r *wire.Result) ([]byte, error) {
	b = append(b, `{"candidates":[`...)
	out := r.N
	if c.Content == nil {
		b = append(b, `{"content":{"parts":[{"text":"`...)
		b = wire.AppendText(b, r, 0, r.N)
		b = append(b, `"}],"role":"model"},"finishReason":"`...)
		b = append(b, geminiFinish(r.Capped)...)
		b = append(b, `","index":0}`...)
	} else {
		cr := c.Content
		for k := range cr.Ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendGeminiCandidate(b, cr, k, r, 0, r.N, true)
		}
		out = cr.OutputTokens(r)
	}
	b = append(b, ']')
	b = g.appendTail(b, c, r, out, true)
	return b, nil
}

// appendGeminiCandidate appends candidate k with its tokens [from, to);
// final adds its finishReason, and a function call, whole, when the
// candidate is one.
func appendGeminiCandidate(b []byte, cr *wire.ContentReq, k int, r *wire.Result, from, to int, final bool) []byte {
	ch := &cr.Ans[k]
	b = append(b, `{"content":{"parts":[`...)
	switch {
	case ch.Tool && final && ch.Whole(r):
		b = append(b, `{"functionCall":{"name":`...)
		b = wire.AppendJSONString(b, cr.Tools[cr.ToolIdx].Name)
		b = append(b, `,"args":`...)
		b = append(b, ch.Doc...)
		b = append(b, `}}`...)
	case ch.Tool:
		b = append(b, `{"text":""}`...)
	default:
		b = append(b, `{"text":"`...)
		b = ch.AppendTokens(b, from, to)
		b = append(b, `"}`...)
	}
	b = append(b, `],"role":"model"}`...)
	if final {
		b = append(b, `,"finishReason":"`...)
		b = append(b, geminiFinish(ch.Capped && ch.Whole(r))...)
		b = append(b, '"')
	}
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(k), 10)
	return append(b, '}')
}

// appendTail appends usageMetadata (out output tokens; final: the counts
// of the whole answer), modelVersion, responseId and, on Vertex AI,
// createTime, and closes the response.
func (g Format) appendTail(b []byte, c *wire.Call, r *wire.Result, out int, final bool) []byte {
	b = append(b, `,"usageMetadata":{"promptTokenCount":`...)
	b = strconv.AppendInt(b, int64(c.Input), 10)
	if final || out > 0 {
		b = append(b, `,"candidatesTokenCount":`...)
		b = strconv.AppendInt(b, int64(out), 10)
	}
	b = append(b, `,"totalTokenCount":`...)
	b = strconv.AppendInt(b, int64(c.Input+out), 10)
	if c.CacheRead > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = strconv.AppendInt(b, int64(c.CacheRead), 10)
	}
	if g.Vertex {
		b = append(b, `,"trafficType":"ON_DEMAND"`...)
	}
	b = append(b, `,"promptTokensDetails":[{"modality":"TEXT","tokenCount":`...)
	b = strconv.AppendInt(b, int64(c.Input), 10)
	b = append(b, `}]`...)
	if final && out > 0 {
		b = append(b, `,"candidatesTokensDetails":[{"modality":"TEXT","tokenCount":`...)
		b = strconv.AppendInt(b, int64(out), 10)
		b = append(b, `}]`...)
	}
	b = append(b, `},"modelVersion":`...)
	b = wire.AppendJSONString(b, c.Model)
	if g.Vertex {
		b = append(b, `,"createTime":"`...)
		b = r.Created.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"responseId":"`...)
	b = append(b, r.ID...) // bare: the Spec has no IDPrefix, as Google's are bare base64url strings
	return append(b, `"}`...)
}

// geminiSSE appends one chunk's frame; Google ends each with CRLF CRLF.
func geminiSSEStart(b []byte) []byte { return append(b, "data: "...) }
func geminiSSEEnd(b []byte) []byte   { return append(b, "\r\n\r\n"...) }

// streamStart sends nothing: the first chunk carries the first tokens.
func (Format) StreamStart(b []byte, _ *wire.Call, _ *wire.Result) []byte { return b }

func (g Format) StreamDelta(b []byte, c *wire.Call, r *wire.Result, from, to int) []byte {
	cr := c.Content
	if cr != nil && cr.Ans[0].Tool {
		return b // a function call goes out whole, in the last chunk
	}
	b = geminiSSEStart(b)
	b = append(b, `{"candidates":[`...)
	out := to
	if cr == nil {
		b = append(b, `{"content":{"parts":[{"text":"`...)
		b = wire.AppendText(b, r, from, to)
		b = append(b, `"}],"role":"model"},"index":0}`...)
	} else {
		out = 0
		for k := range cr.Ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendGeminiCandidate(b, cr, k, r, from, to, false)
			out += min(cr.Ans[k].N, to)
		}
	}
	b = append(b, ']')
	b = g.appendTail(b, c, r, out, false)
	return geminiSSEEnd(b)
}

func (g Format) StreamEnd(b []byte, c *wire.Call, r *wire.Result) []byte {
	b = geminiSSEStart(b)
	b = append(b, `{"candidates":[`...)
	out := r.N
	if cr := c.Content; cr == nil {
		b = append(b, `{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"`...)
		b = append(b, geminiFinish(r.Capped)...)
		b = append(b, `","index":0}`...)
	} else {
		for k := range cr.Ans {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendGeminiCandidate(b, cr, k, r, 0, 0, true)
		}
		out = cr.OutputTokens(r)
	}
	b = append(b, ']')
	b = g.appendTail(b, c, r, out, true)
	return geminiSSEEnd(b)
}

// streamError is the error chunk Google sends when a stream fails after
// its 200: the google.rpc.Status envelope as a data frame.
func (Format) StreamError(b []byte, _ *wire.Call, _ *wire.Result) []byte {
	b = geminiSSEStart(b)
	b = append(b, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`...)
	return geminiSSEEnd(b)
}
