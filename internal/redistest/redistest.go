// Package redistest gives ratelab's tests the real Redis server that
// .ci/start-redis.sh starts: its URL, a client, and key names unique to a
// test whose keys are deleted when the test ends. Importing it also silences
// go-redis's logger, which would otherwise print every failed dial of a test
// that stops a server on purpose.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL returns the URL of the shared test server (RATELAB_REDIS_URL, as
// printed by .ci/start-redis.sh). Without it the test fails when CI is set,
// so a CI run can never skip the Redis tests silently, and is skipped
// elsewhere with a message saying how to run it.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("RATELAB_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("RATELAB_REDIS_URL is not set on CI; run: export RATELAB_REDIS_URL=$(.ci/start-redis.sh)")
		}
		t.Skip("no Redis: run export RATELAB_REDIS_URL=$(.ci/start-redis.sh) to run this test")
	}
	return url
}

// Client returns a client of the shared test server, closed when the test
// ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(URL(t))
	if err != nil {
		t.Fatalf("RATELAB_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// Name returns a name unique to this run of the test: base, the test's name
// made safe for a Redis key (no hash-tag braces, no spaces or slashes), and
// random hex.
func Name(t testing.TB, base string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_", "{", "(", "}", ")").Replace(t.Name())
	return base + "-" + name + "-" + hex.EncodeToString(b[:])
}

// DeleteAtEnd deletes the keys matching pattern (a KEYS glob) when the test
// ends.
func DeleteAtEnd(t testing.TB, c *redis.Client, pattern string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if keys, _ := c.Keys(ctx, pattern).Result(); len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
}

func init() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
