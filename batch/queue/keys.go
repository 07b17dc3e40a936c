package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/redact"
	"github.com/redis/go-redis/v9"
)

// Group is the consumer group every worker of a job joins.
const Group = "workers"

// DefaultLease is how long an item taken by a worker that stopped
// answering stays with it before another worker takes it over.
const DefaultLease = 30 * time.Second

// keys are the Redis keys of one job.
type keys struct {
	job, items, done, workers, stats string
}

func keysOf(name string) keys {
	p := "ratelab:batch:{" + name + "}:"
	return keys{job: p + "job", items: p + "items", done: p + "done", workers: p + "workers", stats: p + "stats"}
}

// CheckName reports why name cannot name a job, or nil.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("--name: a job needs a name")
	case len(name) > 200:
		return fmt.Errorf("--name: at most 200 bytes, got %d", len(name))
	case strings.ContainsAny(name, "{}"):
		return fmt.Errorf("--name %q: braces are not allowed (the name is a Redis Cluster hash tag)", name)
	case strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("--name %q: spaces and control characters are not allowed", name)
	}
	return nil
}

// Dial connects to the Redis at url and checks that it answers:
// redis://HOST:PORT/DB (rediss:// for TLS) for one server, or
// redis+cluster://HOST:PORT?addr=HOST2:PORT2… (rediss+cluster:// for TLS)
// for a Redis Cluster, in which a job's keys share one hash slot.
func Dial(ctx context.Context, url string) (redis.UniversalClient, error) {
	if url == "" {
		return nil, errors.New("--queue: want redis://HOST:PORT/DB")
	}
	var c redis.UniversalClient
	var addr string
	if rest, ok := strings.CutPrefix(url, "redis+cluster://"); ok || strings.HasPrefix(url, "rediss+cluster://") {
		scheme := "redis://"
		if !ok {
			scheme, rest = "rediss://", strings.TrimPrefix(url, "rediss+cluster://")
		}
		opts, err := redis.ParseClusterURL(scheme + rest)
		if err != nil {
			return nil, fmt.Errorf("--queue %s: %v", redact.URL(url), err)
		}
		opts.MaxRetries = -1
		opts.ContextTimeoutEnabled = true
		c, addr = redis.NewClusterClient(opts), strings.Join(opts.Addrs, ",")
	} else {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, fmt.Errorf("--queue %s: %v", redact.URL(url), err)
		}
		opts.MaxRetries = -1
		// A worker bounds its heartbeats and acknowledgements by a context
		// deadline, to notice a lost Redis in a heartbeat, not a socket
		// timeout.
		opts.ContextTimeoutEnabled = true
		c, addr = redis.NewClient(opts), opts.Addr
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("--queue: redis unreachable at %s: %v", addr, err)
	}
	return c, nil
}

// newGen returns a new generation id.
func newGen() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lineOf is the input line of stream entry id (LINE-0, as enqueue adds
// them).
func lineOf(id string) (int, error) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.Atoi(ms)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("queue: stream entry %q is not an item of loadgen batch enqueue", id)
	}
	return n, nil
}

// isNoGroup reports whether err says the stream or its group is gone.
func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}

// isConnErr reports whether err is the network's (Redis unreachable), not
// Redis's answer.
func isConnErr(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var re redis.Error
	return !errors.As(err, &re)
}
