package provider

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/ratelab/ratelab/provider/anthropic"
	"github.com/ratelab/ratelab/provider/azureopenai"
	"github.com/ratelab/ratelab/provider/bedrock"
	"github.com/ratelab/ratelab/provider/gemini"
	"github.com/ratelab/ratelab/provider/openaichat"
	"github.com/ratelab/ratelab/provider/openairesponses"
	"github.com/ratelab/ratelab/provider/vertex"
	"github.com/ratelab/ratelab/provider/vertexanthropic"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Provider encodes requests for one provider's API and classifies its
// responses. Implementations are stateless and safe for concurrent use.
//
// The built-in providers are wire formats (wire.Format), each a package of
// its own, registered in formats; a Client decodes a registered one in
// place (wire.Decode). Any other Provider is decoded through its Decode.
type Provider interface {
	// Name is the provider's name: "anthropic", "openai",
	// "openai-responses" or "azure-openai".
	Name() string
	// DefaultBaseURL is the production endpoint a Client uses when its
	// BaseURL is empty.
	DefaultBaseURL() string
	// KeyEnv names the environment variable that conventionally holds the
	// provider's API key (ANTHROPIC_API_KEY, OPENAI_API_KEY).
	KeyEnv() string
	// NewRequest builds the HTTP request for one attempt. attempt is the
	// 0-based attempt index, sent as X-Stainless-Retry-Count as the SDKs do.
	// An empty baseURL means DefaultBaseURL; an empty apiKey sends no
	// credentials.
	NewRequest(ctx context.Context, baseURL, apiKey string, r Request, attempt int) (*http.Request, error)
	// Decode reads resp to the end (JSON or SSE, chosen by its Content-Type)
	// and classifies the attempt. sent is when the request was sent; Latency
	// and TTFT are measured from it, on the Clock of the Client that sent
	// the request (clock.Real otherwise). Decode does not close resp.Body.
	Decode(resp *http.Response, sent time.Time) (Response, strategies.Outcome)
}

// formats are the registered wire formats, by which ByName finds a
// provider and Client.Do decodes one in place. Adding a format is one
// package implementing wire.Format and one line here (and its entry in the
// conformance table, formats_test.go).
var formats = [...]wire.Format{
	anthropic.Format{},
	openaichat.Format{},
	// The Responses API, the one the AI SDK's default OpenAI provider calls.
	openairesponses.Format{},
	// Azure OpenAI's Chat Completions, by deployment (docs/azure.md).
	azureopenai.Format{},
	// Amazon Bedrock Runtime's Converse API, SigV4-signed.
	bedrock.Format{},
	// Google: the Gemini API on AI Studio and on Vertex AI, and
	// Anthropic's Messages API on Vertex AI (docs/gemini.md).
	gemini.Format{},
	vertex.Format{},
	vertexanthropic.Format{},
}

// ByName returns the provider called name ("anthropic", "openai",
// "openai-responses" or "azure-openai"), with its default options.
func ByName(name string) (Provider, error) {
	for _, f := range formats {
		if f.Name() == strings.ToLower(name) {
			return f.(Provider), nil
		}
	}
	return nil, fmt.Errorf("provider: unknown provider %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// Names lists the providers ByName knows, sorted.
func Names() []string {
	names := make([]string, 0, len(formats))
	for _, f := range formats {
		names = append(names, f.Name())
	}
	sort.Strings(names)
	return names
}

// formatOf returns p as a registered wire format, whose Decode is
// wire.Decode over it, so that Client.Do can call wire.Decode itself, in
// place; nil for any other Provider, which Client.Do decodes with its
// Decode. It matches p's dynamic type, not its methods: a type embedding a
// built-in provider to override its Decode has every method of a
// wire.Format, and Client.Do would otherwise bypass its Decode.
func formatOf(p Provider) wire.Format {
	t := reflect.TypeOf(p)
	for _, f := range formats {
		if reflect.TypeOf(f) == t {
			return p.(wire.Format)
		}
	}
	return nil
}
