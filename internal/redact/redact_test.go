package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"redis://localhost:6379/0", "redis://localhost:6379/0"},
		{"https://user:hunter2@example.com/v1", "https://REDACTED@example.com/v1"},
		{"redis://:hunter2@localhost:6379/0", "redis://REDACTED@localhost:6379/0"},
		{"rediss://default:hunter2@cache.example:6380", "rediss://REDACTED@cache.example:6380"},
		{"https://hunter2@example.com", "https://REDACTED@example.com"},
		// An "@" after the authority is the path's or query's, not a password.
		{"http://example.com/v1/a@b?c=d@e#f@g", "http://example.com/v1/a@b?c=d@e#f@g"},
		{"https://u:hunter2@example.com/a@b", "https://REDACTED@example.com/a@b"},
		// Passwords that break parsing: an unescaped "/", "?", "#", "@" or
		// space, a bad port. The password must still not show.
		{"redis://:hun/ter2@localhost:6379/0", "redis://REDACTED@localhost:6379/0"},
		{"redis://:hunter2?x@localhost:6379", "redis://REDACTED@localhost:6379"},
		{"redis://:hunter2#x@localhost:6379", "redis://REDACTED@localhost:6379"},
		{"redis://:12/hunter2@localhost", "redis://REDACTED@localhost"},
		{"redis://u:hun@ter2@localhost:6379", "redis://REDACTED@localhost:6379"},
		{"redis://u:hunter 2@localhost:port", "redis://REDACTED@localhost:port"},
		// No scheme: the whole text is the authority.
		{"u:hunter2@localhost:6379", "REDACTED@localhost:6379"},
		{"localhost:6379", "localhost:6379"},
		{"//u:hunter2@localhost/x", "//REDACTED@localhost/x"},
	}
	for _, tt := range tests {
		got := URL(tt.in)
		if got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "hunter2") || strings.Contains(got, "hun/ter2") || strings.Contains(got, "ter2@") {
			t.Errorf("URL(%q) = %q shows the password", tt.in, got)
		}
	}
}

// FuzzURL: a text without "@" comes back unchanged, and a URL that parses
// with user information and a host comes back as the same URL with the user
// information "REDACTED".
func FuzzURL(f *testing.F) {
	f.Add("redis://:secret@localhost:6379/0")
	f.Add("http://example.com/a@b")
	f.Add("https://u:p@h/x?y#z")
	f.Add("//@0")
	f.Fuzz(func(t *testing.T, raw string) {
		got := URL(raw)
		if !strings.Contains(raw, "@") {
			if got != raw {
				t.Fatalf("URL(%q) = %q, want it unchanged (no user information)", raw, got)
			}
			return
		}
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || u.Host == "" {
			return
		}
		g, err := url.Parse(got)
		if err != nil {
			t.Fatalf("URL(%q) = %q, which does not parse: %v", raw, got, err)
		}
		if g.User.String() != "REDACTED" || g.Host != u.Host || g.Path != u.Path || g.RawQuery != u.RawQuery || g.Fragment != u.Fragment {
			t.Fatalf("URL(%q) = %q: user %q host %q path %q query %q fragment %q; want REDACTED and the rest of %q", raw, got, g.User, g.Host, g.Path, g.RawQuery, g.Fragment, raw)
		}
	})
}
