// Package vertex is the Gemini API on Vertex AI (docs/gemini.md): POST
// {base}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent,
// or :streamGenerateContent?alt=sse, with an OAuth access token as a
// bearer token. Bodies, streams and errors are the Gemini API's (package
// gemini).
package vertex

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/ratelab/ratelab/provider/gemini"
	"github.com/ratelab/ratelab/provider/wire"
	"github.com/ratelab/ratelab/strategies"
)

// Format is the Gemini API on Vertex AI. Project and Location name the
// resource every path is under; empty, they are GOOGLE_CLOUD_PROJECT and
// GOOGLE_CLOUD_LOCATION (the variables the SDKs read), and then Location
// is "global". Against a base URL other than the default (the mock), an
// unknown project is DefaultProject.
type Format struct {
	Project, Location string
}

var _ wire.Format = Format{}

// DefaultProject is the project of a request to a non-default base URL
// when none is configured: the mock serves any project.
const DefaultProject = "ratelab"

// Name returns "vertex".
func (Format) Name() string { return "vertex" }

// DefaultBaseURL is the location's endpoint:
// https://{location}-aiplatform.googleapis.com, or
// https://aiplatform.googleapis.com for the global location.
func (f Format) DefaultBaseURL() string {
	if l := f.location(); l != "global" {
		return "https://" + l + "-aiplatform.googleapis.com"
	}
	return "https://aiplatform.googleapis.com"
}

// KeyEnv returns GOOGLE_CLOUD_ACCESS_TOKEN: an OAuth access token (from
// gcloud auth print-access-token), sent as a bearer token. The SDKs get
// theirs from Application Default Credentials instead.
func (Format) KeyEnv() string { return "GOOGLE_CLOUD_ACCESS_TOKEN" }

func (f Format) location() string {
	switch {
	case f.Location != "":
		return f.Location
	case os.Getenv("GOOGLE_CLOUD_LOCATION") != "":
		return os.Getenv("GOOGLE_CLOUD_LOCATION")
	}
	return "global"
}

// Resource is the path of the project and location,
// /v1/projects/{project}/locations/{location}, for a request to baseURL.
func (f Format) Resource(baseURL string) (string, error) {
	p := f.Project
	if p == "" {
		p = os.Getenv("GOOGLE_CLOUD_PROJECT")
	}
	if p == "" {
		if baseURL == "" {
			return "", fmt.Errorf("provider: vertex request: no project: set GOOGLE_CLOUD_PROJECT or vertex.Format.Project")
		}
		p = DefaultProject
	}
	return "/v1/projects/" + url.PathEscape(p) + "/locations/" + url.PathEscape(f.location()), nil
}

// NewRequest builds POST …/publishers/google/models/{model}:generateContent
// with Authorization: Bearer.
func (f Format) NewRequest(ctx context.Context, baseURL, apiKey string, r wire.Request, attempt int) (*http.Request, error) {
	res, err := f.Resource(baseURL)
	if err != nil {
		return nil, err
	}
	u := wire.JoinURL(baseURL, f.DefaultBaseURL(), res+"/publishers/google/models/"+url.PathEscape(r.Model)+gemini.Method(r.Stream))
	req, h, err := wire.NewPost(ctx, "vertex", u, gemini.NewBody(r), r, attempt)
	if err != nil {
		return nil, err
	}
	if apiKey != "" {
		h["Authorization"] = []string{"Bearer " + apiKey}
	}
	return req, nil
}

// Decode reads a response as the Gemini API's.
func (Format) Decode(resp *http.Response, sent time.Time) (out wire.Response, o strategies.Outcome) {
	wire.Decode(resp, sent, &gemini.Spec, &out, &o)
	return out, o
}

// Spec returns the Gemini API's part of wire.Decode.
func (Format) Spec() *wire.Spec { return &gemini.Spec }
