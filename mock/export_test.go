package mock

// DisableCallAccounting turns off the call accounting of s, for the
// benchmark that measures its cost. Call it before s serves.
func DisableCallAccounting(s *Server) { s.calls.disabled = true }
