// Package openairesponses is the OpenAI Responses API's wire format on the
// server side. It decodes a request, and writes the Response and its
// stream events from what the core decided; its errors and rate-limit
// headers are Chat Completions' (it embeds openaichat.Format).
package openairesponses
