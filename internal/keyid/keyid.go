// Package keyid names an API key without revealing it. Its fingerprint is
// the one string that the server (metrics, stats, Redis) and the client
// (state files, Cost.Key, reports) both use for a key.
package keyid

import (
	"crypto/sha256"
	"encoding/hex"
)

// Fingerprint returns the first 12 hex digits of the key's SHA-256, for
// every key including "".
func Fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}
