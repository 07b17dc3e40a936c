package mock

import (
	"net/http"
	"runtime/debug"
)

// headerWriter remembers whether the response has started, so a recovered
// panic knows whether it can still answer 500.
type headerWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *headerWriter) WriteHeader(code int) {
	if code >= 200 {
		w.wrote = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *headerWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *headerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pastHeader is w once its response has started: a headerWriter has
// nothing left to remember then, so a stream's writes skip it.
func pastHeader(w http.ResponseWriter) http.ResponseWriter {
	if hw, ok := w.(*headerWriter); ok && hw.wrote {
		return hw.ResponseWriter
	}
	return w
}

// recoverPanics answers a panicking handler with 500 api_error and logs the
// panic; a panic after the response started aborts the connection instead.
// http.ErrAbortHandler passes through: it is how handlers cut connections.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hw := &headerWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { // compared as net/http compares it
				panic(v)
			}
			s.log.Error("mock: handler panic", "method", req.Method, "path", req.URL.Path, "panic", v, "stack", string(debug.Stack()))
			s.metrics.panics.Inc()
			if hw.wrote {
				panic(http.ErrAbortHandler)
			}
			s.routeError(hw, req, http.StatusInternalServerError, "internal server error")
		}()
		next.ServeHTTP(hw, req)
	})
}
