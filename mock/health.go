package mock

import (
	"io"
	"net/http"
)

// healthz is the liveness probe: the process serves requests. It needs no
// credential and counts in no statistics.
func (s *Server) healthz(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readyz is the readiness probe: 200 while the server accepts calls, 503
// from the moment Shutdown or Close is called, so a load balancer stops
// sending calls while the in-flight ones drain.
func (s *Server) readyz(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.draining.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "shutting down\n")
		return
	}
	io.WriteString(w, "ready\n")
}
