package mock

import (
	"net/http"
	"strings"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// authenticate returns the API key of req, or ok false when keys are
// configured and req carries none of them: in wire.Spec.APIKeyHeader, then
// in the query parameter wire.Spec.APIKeyQuery, then as a bearer token.
// Anthropic accepts x-api-key or a bearer token, OpenAI a bearer token; a
// format with its own scheme (wire.Spec.Authenticate: Bedrock's SigV4)
// decides for itself.
func (s *Server) authenticate(req *http.Request, wr wire.Format) (key string, ok bool, why string) {
	spec := wr.Spec()
	if spec.Authenticate != nil {
		return spec.Authenticate(req, wire.Credentials{Keys: s.keys, Secrets: s.cfg.AWSSecretKeys, MaxBody: MaxBodyBytes})
	}
	if len(s.keys) == 0 {
		return "", true, ""
	}
	if spec.APIKeyHeader != "" {
		if k := req.Header.Get(spec.APIKeyHeader); k != "" {
			if s.keys[k] {
				return k, true, ""
			}
			return "", false, "invalid " + strings.ToLower(spec.APIKeyHeader)
		}
	}
	if q := spec.APIKeyQuery; q != "" {
		if k := req.URL.Query().Get(q); k != "" {
			if s.keys[k] {
				return k, true, ""
			}
			return "", false, "invalid API key in ?" + q + "="
		}
	}
	auth := req.Header.Get("Authorization")
	const bearer = "Bearer "
	if len(auth) > len(bearer) && auth[:len(bearer)] == bearer {
		if k := auth[len(bearer):]; s.keys[k] {
			return k, true, ""
		}
		return "", false, "invalid API key in Authorization: Bearer"
	}
	return "", false, spec.MissingKey
}
