package batchrun

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/provider"
)

// endpoint is where a batch's calls go, the same for loadgen batch and
// --via batch-api: the embedded mock (--target mock) or a base URL
// (--base-url, the scenario's target, else the provider's production URL),
// with the key and the HTTP client.
type endpoint struct {
	baseURL   string // the client's base URL; "" for the provider's production URL
	http      *http.Client
	key       string
	target    string        // the report's Target: "embedded mock" or the URL, user information hidden
	stateBase string        // the base URL adaptive's state is kept under
	base      string        // --base-url or the scenario's target URL; "" for neither
	mock      *loadgen.Mock // the embedded mock, nil against a base URL
	close     func()
}

// openEndpoint starts the embedded mock or checks the base URL, reads the
// key, and makes a client with conns connections a host.
func openEndpoint(ctx context.Context, s *loadgen.Scenario, opt Options, p provider.Provider, conns int) (endpoint, error) {
	if opt.Mock {
		if opt.BaseURL != "" {
			return endpoint{}, usagef("--target mock and --base-url: choose one")
		}
		m, err := loadgen.StartMock(s, opt.Listen, conns)
		if err != nil {
			return endpoint{}, err
		}
		key := s.Request.APIKey
		if opt.APIKeyCommand != "" { // a mock configured with api_keys
			if key, err = CommandKey(ctx, opt.APIKeyCommand); err != nil {
				m.Close()
				return endpoint{}, err
			}
		}
		return endpoint{baseURL: loadgen.ProviderBase(p.Name(), m.BaseURL), http: m.HTTP, key: key,
			target: "embedded mock", stateBase: "embedded-mock", mock: m, close: m.Close}, nil
	}
	base := opt.BaseURL
	if base == "" && s.Target != nil {
		base = s.Target.URL
	}
	if base != "" && !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return endpoint{}, usagef("--base-url: must start with http:// or https://, got %q", redact.URL(base))
	}
	key, err := batchKey(ctx, opt, s, p)
	if err != nil {
		return endpoint{}, err
	}
	if key == "" && base == "" {
		return endpoint{}, &batchError{kind: loadgen.ErrNoKey, msg: fmt.Sprintf("batch: no API key for %s: set %s, or give --api-key-command, or --base-url for a server that needs no key, or --target mock to try the embedded mock",
			p.Name(), keyEnv(s, p))}
	}
	ep := endpoint{key: key, base: base}
	if base != "" {
		ep.baseURL = loadgen.ProviderBase(p.Name(), base)
	}
	tr := provider.NewTransport(conns)
	ep.http, ep.close = &http.Client{Transport: tr}, tr.CloseIdleConnections
	ep.stateBase = cmp.Or(ep.baseURL, p.DefaultBaseURL())
	ep.target = redact.URL(ep.stateBase)
	return ep, nil
}

// keyEnv names the environment variable the key is read from.
func keyEnv(s *loadgen.Scenario, p provider.Provider) string {
	if s.Target != nil && s.Target.APIKeyEnv != "" {
		return s.Target.APIKeyEnv
	}
	return p.KeyEnv()
}

// getenv is opt's Getenv, else os.Getenv.
func (opt Options) getenv(name string) string {
	if opt.Getenv != nil {
		return opt.Getenv(name)
	}
	return os.Getenv(name)
}

// batchKey reads the API key: from --api-key-command, else the environment.
func batchKey(ctx context.Context, opt Options, s *loadgen.Scenario, p provider.Provider) (string, error) {
	if opt.APIKeyCommand != "" {
		return CommandKey(ctx, opt.APIKeyCommand)
	}
	return strings.TrimSpace(opt.getenv(keyEnv(s, p))), nil
}

// KeyCommandTimeout bounds --api-key-command.
const KeyCommandTimeout = 30 * time.Second

// CommandKey runs command with sh -c, as a secret manager's CLI is run
// (`vault kv get -field=key secret/llm`), and returns its stdout trimmed:
// one line, the key. Its errors never contain the key, nor the command's
// stdout; they quote the first line of its stderr.
func CommandKey(ctx context.Context, command string) (string, error) {
	timeout := KeyCommandTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, "sh", "-c", command)
	// A child of sh that keeps stdout open must not hold Run past the kill.
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	key := strings.TrimSpace(stdout.String())
	if err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		// Rounded as a person states a timeout: the caller's deadline is
		// already a few ms nearer than it was set by the time it is read.
		shown := timeout.Round(100 * time.Millisecond)
		if timeout >= 10*time.Second {
			shown = timeout.Round(time.Second)
		}
		return "", provider.Redact(usagef("--api-key-command did not finish within %v and was stopped; check that it does not wait for input", shown), key)
	}
	if err != nil {
		msg, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if msg != "" {
			msg = ": " + msg
		}
		return "", provider.Redact(usagef("--api-key-command: %v%s", err, msg), key)
	}
	switch {
	case key == "":
		return "", usagef("--api-key-command printed nothing on stdout; it must print the key")
	case strings.ContainsAny(key, "\r\n"):
		return "", usagef("--api-key-command printed more than one line; it must print the key alone")
	}
	return key, nil
}
