// Package record writes and reads recordings: one JSON line per HTTP
// attempt against an LLM API, as `loadgen run --record`, `loadgen batch
// --record` and `mockllm --upstream URL --record` write them, and as
// `loadgen calibrate` reads them. The format is documented field by field in
// docs/calibrate.md; Version numbers it.
//
// Attempts are observed in one place, Transport, an http.RoundTripper that
// wraps the client's (loadgen) or the proxy's upstream transport (mockllm),
// so every recording of either has the same lines.
package record

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ratelab/ratelab/internal/keyid"
)

// Version is the recording format's version, in the header line. A reader
// refuses a later version.
const Version = 1

// Header is a recording's first line.
type Header struct {
	// Recording is the format's version: its presence marks the line as a
	// ratelab recording's header.
	Recording int `json:"ratelab_recording"`
	// Source is what wrote the file: "loadgen run", "loadgen batch" or
	// "mockllm proxy".
	Source string `json:"source"`
	// Started is when the recorder was opened, on the run's clock.
	Started time.Time `json:"started"`
	// Simulated is set when the run's clock was simulated (loadgen
	// --virtual): the times are virtual.
	Simulated bool `json:"simulated,omitempty"`
}

// Usage is the token usage a response reported.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
}

// Attempt is one line after the header: one HTTP attempt.
type Attempt struct {
	SentAt time.Time `json:"sent_at"`
	Run    string    `json:"run,omitempty"` // the scenario row, for loadgen run
	// Provider is the wire format, from the path (ProviderOf): anthropic,
	// openai, openai-responses, azure-openai, azure-openai-responses,
	// gemini, vertex, vertex-anthropic, bedrock.
	Provider string `json:"provider,omitempty"`
	Path     string `json:"path"`
	Key      string `json:"key,omitempty"` // the key's label (KeyLabel), never the key
	// Model is the model the path names (Gemini, Vertex AI, Bedrock, an
	// Azure deployment), else the request body's, else the response's.
	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	// MaxTokens is the request's max_tokens (max_completion_tokens,
	// max_output_tokens); 0 when it set none.
	MaxTokens int `json:"max_tokens,omitempty"`
	// RetryCount is the X-Stainless-Retry-Count the request carried, or
	// the AWS SDKs' amz-sdk-request attempt less one (its attempt=N part).
	RetryCount int `json:"retry_count,omitempty"`
	// InFlight is how many attempts through this recorder were in flight
	// when this one was sent, itself included.
	InFlight int `json:"in_flight"`

	Status int `json:"status"` // 0 when no response arrived
	// ErrorType is the error body's type (rate_limit_error, overloaded_error,
	// …), or "transport" when no response arrived, or "stream_cut" when the
	// body broke off.
	ErrorType    string `json:"error_type,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"` // its message, at most 300 bytes
	// ErrorCode is the error's finer code: Anthropic's details.error_code,
	// OpenAI's code, Google's QuotaFailure quotaId (which names the quota:
	// …RequestsPerMinute…, …TokensPerModelPerMinute…) or ErrorInfo reason.
	ErrorCode  string `json:"error_code,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`

	// HeadersMS is the time from sending to the response's headers,
	// LatencyMS to the end of its body.
	HeadersMS float64 `json:"headers_ms"`
	LatencyMS float64 `json:"latency_ms"`
	// RetryAfterMS is the server's retry-after-ms, else retry-after in
	// seconds, else the error body's retry delay (Google's RetryInfo
	// retryDelay), in milliseconds; absent when the response had none.
	RetryAfterMS *float64 `json:"retry_after_ms,omitempty"`
	// RetryAfterFrom is "body" when RetryAfterMS came from the error body.
	RetryAfterFrom string `json:"retry_after_from,omitempty"`
	// Headers are the response's rate-limit and retry headers, by
	// lower-case name (anthropic-ratelimit-*, x-ratelimit-*, retry-after,
	// retry-after-ms, x-should-retry).
	Headers map[string]string `json:"headers,omitempty"`

	// A stream's token timings: TTFTMS from sending to the first content
	// delta, LastTokenMS to the last; Frames counts the content deltas, and
	// GapMeanMS and GapStdMS are the mean and standard deviation of the
	// gaps between consecutive ones.
	TTFTMS      float64 `json:"ttft_ms,omitempty"`
	LastTokenMS float64 `json:"last_token_ms,omitempty"`
	Frames      int     `json:"frames,omitempty"`
	GapMeanMS   float64 `json:"gap_mean_ms,omitempty"`
	GapStdMS    float64 `json:"gap_std_ms,omitempty"`

	Usage *Usage `json:"usage,omitempty"`
}

// KeyLabel is the label a recording gives an API key: its fingerprint
// (keyid.Fingerprint, the first 12 hex digits of its SHA-256), the one
// name the mock's stats, adaptive's state files and the saved profiles use
// too. No key ("") has one as well, e3b0c44298fc; recordings written
// before it had none ("").
func KeyLabel(key string) string { return keyid.Fingerprint(key) }

// Writer appends lines to a recording. Each line is written with one
// Write of the whole line, so that a crash leaves every line but perhaps the
// last whole (a reader reports a cut-off last line and reads the rest).
// It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	f   *os.File // when Create opened it
	err error    // the first write error; later lines are dropped
	buf []byte
}

// Create creates (truncating) the recording file path and writes its header.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	w, err := NewWriter(f, h)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.f = f
	return w, nil
}

// NewWriter writes the header h to w and returns a Writer appending to it.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Recording = Version
	rw := &Writer{w: w}
	if err := rw.line(h); err != nil {
		return nil, err
	}
	return rw, nil
}

// Write appends one attempt.
func (w *Writer) Write(a *Attempt) error { return w.line(a) }

func (w *Writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = append(append(w.buf[:0], b...), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("record: %w", err)
	}
	return w.err
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the file Create opened and returns the first error.
func (w *Writer) Close() error {
	err := w.Err()
	if w.f != nil {
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("record: %w", cerr)
		}
	}
	return err
}
