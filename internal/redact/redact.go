// Package redact hides the password of a URL (redis://user:secret@host,
// https://key@host) before a message, log line or report shows it.
package redact

import (
	"net/url"
	"strings"
)

// URL returns raw with its user information, everything between "://" and
// the host, replaced by "REDACTED": redis://:secret@host:6379/0 becomes
// redis://REDACTED@host:6379/0. A URL without user information comes back
// unchanged, so the host and path stay readable.
//
// It is written for the messages about a URL that failed to parse, so it
// reads raw as text: an "@" within the authority (before the first "/",
// "?" or "#" after "://") ends the user information; in a URL that does not
// parse, or parses with no host, the last "@" does, since a password may hold
// an unescaped "/", "?" or "#". Without "://" the whole of raw is the
// authority (after a leading "//", as in //host/path).
func URL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	} else if strings.HasPrefix(raw, "//") {
		start = len("//")
	}
	rest := raw[start:]
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			return raw
		}
		at = strings.LastIndex(rest, "@")
	}
	if at < 0 {
		return raw
	}
	return raw[:start] + "REDACTED" + rest[at:]
}
