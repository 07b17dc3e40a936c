package mock

import (
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/mock/internal/wire"
)

// adminRoutes are the admin API's routes:
//
//	GET  /_admin/limits    PUT /_admin/limits     the per-key limits in force
//	GET  /_admin/latency   PUT /_admin/latency    the latency model
//	GET  /_admin/faults    PUT /_admin/faults     the injected faults
//	GET  /_admin/quota     PUT /_admin/quota      the per-key quota
//	GET  /_admin/limits_by_model  PUT …           the per-model pools (a pattern set to null is removed)
//	GET  /_admin/stats                            Stats as JSON
//	POST /_admin/reset                            Reset
//
// GET answers JSON with durations as strings ("5ms"), in the YAML schema's
// keys. PUT takes JSON or YAML in the same schema, decoded strictly over the
// current value, so a body may hold only the keys it changes. When the
// Config has an AdminToken, every admin request must carry it.
//
// They are full paths, each behind adminAuth, rather than a /_admin/
// subrouter: in a gorilla/mux subrouter, a later route's prefix matcher
// clears an earlier route's method mismatch, so a wrong method got 404
// instead of 405.
func (s *Server) adminRoutes() []route {
	var t []route
	handle := func(path string, h http.HandlerFunc, methods ...string) {
		t = append(t, route{adminPrefix + path, methods, s.adminAuth(h)})
	}
	adminSetting(s, handle, "limits", s.Limits, s.SetLimits, func(c *Config, v Limits) { c.Limits = v })
	adminSetting(s, handle, "latency", s.Latency, s.SetLatency, func(c *Config, v Latency) { c.Latency = v })
	adminSetting(s, handle, "faults", s.Faults, s.SetFaults, func(c *Config, v Faults) { c.Faults = v })
	adminSetting(s, handle, "quota", s.Quota, s.SetQuota, func(c *Config, v Quota) { c.Quota = v })
	adminSetting(s, handle, "limits_by_model", s.poolsPatch, s.setPoolsPatch, func(c *Config, v poolsPatch) { c.LimitsByModel = v })
	handle("stats", func(w http.ResponseWriter, _ *http.Request) {
		wire.WriteJSONBody(w, http.StatusOK, s.Stats())
	}, http.MethodGet)
	handle("reset", func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		wire.WriteJSONBody(w, http.StatusOK, map[string]bool{"reset": true})
	}, http.MethodPost)
	return t
}

// adminSetting serves GET and PUT /NAME for one runtime setting: GET answers
// get(); PUT decodes the body over get() (into places it in a Config, so it
// is validated as the file would be), then applies it with set.
func adminSetting[T any](s *Server, handle func(string, http.HandlerFunc, ...string), name string, get func() T, set func(T), into func(*Config, T)) {
	handle(name, func(w http.ResponseWriter, _ *http.Request) { writeAdmin(w, get()) }, http.MethodGet)
	handle(name, func(w http.ResponseWriter, req *http.Request) {
		v := get()
		if s.adminDecode(w, req, name, &v, func(c *Config) { into(c, v) }) {
			set(v)
			writeAdmin(w, v)
		}
	}, http.MethodPut)
}

func (s *Server) adminAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if tok := s.cfg.AdminToken; tok != "" && !hasToken(req, tok) {
			s.routeError(w, req, http.StatusUnauthorized, "admin token required: send Authorization: Bearer TOKEN or X-Admin-Token")
			return
		}
		next.ServeHTTP(w, req)
	})
}

// metricsAuth guards /metrics: with a MetricsToken, it or the AdminToken
// is required; with only an AdminToken, that one; with neither, /metrics is
// open. Series carry key fingerprints, never keys, but request counts per
// key and status are still the operator's business.
func (s *Server) metricsAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mt, at := s.cfg.MetricsToken, s.cfg.AdminToken
		if mt == "" && at == "" || mt != "" && hasToken(req, mt) || at != "" && hasToken(req, at) {
			next.ServeHTTP(w, req)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mockllm metrics"`)
		s.routeError(w, req, http.StatusUnauthorized, "metrics token required: send Authorization: Bearer TOKEN (--metrics-token, or --admin-token when no metrics token is set)")
	})
}

// hasToken reports whether req carries tok as a bearer token or in
// X-Admin-Token, comparing in constant time.
func hasToken(req *http.Request, tok string) bool {
	got := req.Header.Get("X-Admin-Token")
	if b, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && got == "" {
		got = b
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1
}

// adminDecode decodes the body strictly into v (already holding the current
// value), with the decoder of the config file, then validates it by placing
// it in a copy of the Config with put.
func (s *Server) adminDecode(w http.ResponseWriter, req *http.Request, section string, v any, put func(*Config)) bool {
	const file = "request body"
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<20))
	if err == nil {
		var root *yaml.Node
		if root, err = strict.Parse(file, body); err == nil {
			d := strict.NewDecoder(file)
			if root != nil {
				d.Decode(root, v, section)
			}
			if err = d.Err(); err == nil {
				cfg := s.cfg
				put(&cfg)
				d.Place("", cfg.Validate())
				err = d.Err()
			}
		}
	}
	if err != nil {
		s.routeError(w, req, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

// writeAdmin writes v as JSON in its YAML form (duration strings, schema
// keys) by way of a generic YAML value.
func writeAdmin(w http.ResponseWriter, v any) {
	y, err := yaml.Marshal(v)
	var generic any
	if err == nil {
		err = yaml.Unmarshal(y, &generic)
	}
	if err != nil {
		wire.WriteJSONBody(w, http.StatusInternalServerError, map[string]string{"error": fmt.Sprintf("encoding: %v", err)})
		return
	}
	wire.WriteJSONBody(w, http.StatusOK, generic)
}

// Latency returns the latency model in force.
func (s *Server) Latency() Latency {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latency
}

// SetLatency changes the latency model of requests admitted from now on.
func (s *Server) SetLatency(l Latency) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = l
}

// Faults returns the injected faults in force.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// SetFaults changes the injected faults of attempts from now on.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}
