// Package azureopenai is the client side of Azure OpenAI's Chat
// Completions (docs/azure.md): OpenAI's request and response shapes
// (package openaichat) under Azure's deployment path, with its
// api-version query parameter and its api-key header.
package azureopenai

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/ratelab/ratelab/provider/openaichat"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// DefaultAPIVersion is the api-version sent when Format.APIVersion is
// empty: the latest GA inference version.
const DefaultAPIVersion = "2024-10-21"

// Format is Azure OpenAI's Chat Completions: POST
// {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=V
// with the key in api-key. The request's model names the deployment, as
// the official SDKs' Azure clients take it; the base URL is the resource's
// endpoint, https://RESOURCE.openai.azure.com, which has no default.
//
// Its answers are OpenAI's, in Azure's envelope for its own errors
// ({"error": {"code": "429", "message": …}}), so a throttle is a 429 with
// retry-after-ms and retry-after (both read, the milliseconds first), an
// overload a 503 or 500, and the content filter's refusal a 400
// content_filter, not retried. Azure sends x-ratelimit-limit- and
// -remaining- requests and tokens, without reset headers.
type Format struct {
	// APIVersion is the api-version sent; empty means DefaultAPIVersion.
	APIVersion string
}

var _ wire.Format = Format{}

// Name returns "azure-openai".
func (Format) Name() string { return "azure-openai" }

// DefaultBaseURL returns the shape of an endpoint,
// https://RESOURCE.openai.azure.com: Azure has no one endpoint, so a
// Client needs its BaseURL set to the resource's.
func (Format) DefaultBaseURL() string { return "https://RESOURCE.openai.azure.com" }

// KeyEnv returns AZURE_OPENAI_API_KEY, the variable the official SDKs'
// Azure clients read.
func (Format) KeyEnv() string { return "AZURE_OPENAI_API_KEY" }

// errNoEndpoint is NewRequest's error without a base URL.
var errNoEndpoint = errors.New("provider: azure-openai needs the base URL of your resource's endpoint (https://RESOURCE.openai.azure.com): Azure has no default")

// NewRequest builds POST {base}/openai/deployments/{model}/chat/completions
// with the api-version and the api-key header, and the body openaichat
// sends (its model field, which Azure ignores, included).
func (f Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	if baseURL == "" {
		return nil, errNoEndpoint
	}
	base := wire.JoinURL(baseURL, "", "/openai/deployments/"+url.PathEscape(r.Model))
	req, err := openaichat.Format{}.NewRequest(ctx, base, "", r, attempt)
	if err != nil {
		return nil, err
	}
	v := f.APIVersion
	if v == "" {
		v = DefaultAPIVersion
	}
	req.URL.RawQuery = "api-version=" + url.QueryEscape(v)
	if apiKey != "" {
		req.Header["Api-Key"] = []string{apiKey}
	}
	return req, nil
}

// Decode reads a chat completion as openaichat does: Azure's extra fields
// (prompt_filter_results, content_filter_results, its first stream event
// without choices) are ignored.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, openaichat.Format{}.Spec(), &out, &o)
	return out, o
}

// Spec returns openaichat's: the same headers, error objects (Azure's
// {"code", "message"} reads as type and code "429") and stream.
func (Format) Spec() *wire.Spec { return openaichat.Format{}.Spec() }
