// Package bedrock is Amazon Bedrock Runtime's wire format on the server side
// (docs/bedrock.md): Converse, ConverseStream, and InvokeModel and
// InvokeModelWithResponseStream for Anthropic models (whose bodies are the
// Messages API's, decoded and written by mock/internal/anthropic).
//
// The model is named by the path (Spec.Routes); requests authenticate by SigV4
// or a Bedrock API key (auth.go, sigv4.go; Spec.Authenticate); streams are
// application/vnd.amazon.eventstream frames (mock/internal/eventstream).
// Bedrock sends no rate-limit headers and no retry hints.
package bedrock
