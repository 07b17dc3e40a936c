package mock

import (
	"net/http"
	"strings"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// authenticate returns the API key of req, or ok false when keys are
// configured and req carries none of them. Anthropic accepts x-api-key or a
// bearer token, OpenAI a bearer token.
func (s *Server) authenticate(req *http.Request, wr wire.Format) (key string, ok bool, why string) {
	if len(s.keys) == 0 {
		return "", true, ""
	}
	spec := wr.Spec()
	if spec.APIKeyHeader != "" {
		if k := req.Header.Get(spec.APIKeyHeader); k != "" {
			if s.keys[k] {
				return k, true, ""
			}
			return "", false, "invalid " + strings.ToLower(spec.APIKeyHeader)
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
