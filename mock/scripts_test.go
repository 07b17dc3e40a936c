package mock_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/pyenv"
	"github.com/ratelab/ratelab/mock"
	"github.com/ratelab/ratelab/mock/mocktest"
)

// The harness of the tests that run the official Node and Python SDKs,
// unchanged, against the mock (*_node_test.go, *_python_test.go,
// azure_clients_test.go): start the mocks a script needs on loopback, run
// the script with their URLs in its environment, then check what it
// printed and what each mock saw.

// scriptMock serves yaml on 127.0.0.1 until the test ends, for a script
// run by runNode or runPython.
func scriptMock(t *testing.T, yaml string) *mocktest.Server {
	t.Helper()
	cfg, err := mock.ParseConfig([]byte(yaml), "script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return mocktest.Start(t, cfg)
}

// bedrockMock serves yaml after a fast latency (no time to first token)
// on 127.0.0.1 until the test ends and returns its base URL, for the
// Bedrock scripts.
func bedrockMock(t *testing.T, yaml string) string {
	t.Helper()
	return scriptMock(t, "latency: {ttft: 0s, per_token: 1ms}\n"+yaml).URL
}

// A clientScript is one run of an SDK script.
type clientScript struct {
	dir   string   // the working directory ("": the package's)
	argv  []string // the interpreter's arguments: its flags, the script (relative to dir) and the script's
	env   []string // the variables added to the environment
	noAWS bool     // leave out the environment's AWS_* variables
}

// name is the script's file name, for messages.
func (s clientScript) name() string {
	for _, a := range s.argv {
		if !strings.HasPrefix(a, "-") {
			return filepath.Base(a)
		}
	}
	return "(no script)"
}

// runNode runs s with node and returns its output. It fails the test when
// node is not installed, or s.dir's node_modules lacks one of pkgs (make
// node-deps runs npm ci in each folder), or the script fails.
func runNode(t *testing.T, s clientScript, pkgs ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: the JavaScript client tests need node and `npm ci` in mock/testdata/node and mock/testdata/node-ai7 (make node-deps)")
	}
	for _, pkg := range append([]string{""}, pkgs...) {
		if _, err := os.Stat(filepath.Join(s.dir, "node_modules", pkg)); err != nil {
			t.Fatalf("node is installed but %s is missing: run `npm ci` in %s (make node-deps)", filepath.Join(s.dir, "node_modules", pkg), s.dir)
		}
	}
	return runScript(t, node, s)
}

// runPython runs s with the Python of the project's venv (pyenv.Python: a
// skip locally without it, a failure under CI) and returns its output. It
// fails the test when the script fails.
func runPython(t *testing.T, s clientScript) string {
	t.Helper()
	return runScript(t, pyenv.Python(t), s)
}

// runScript runs prog with s's arguments for at most two minutes, logs its
// output and fails the test when it fails.
func runScript(t *testing.T, prog string, s clientScript) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, s.argv...)
	cmd.Dir = s.dir
	cmd.Env = os.Environ()
	if s.noAWS {
		cmd.Env = withoutAWSEnv()
	}
	cmd.Env = append(cmd.Env, s.env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", s.name(), out)
	if err != nil {
		t.Fatalf("%s: %v", s.name(), err)
	}
	return string(out)
}

// withoutAWSEnv is the environment without AWS_* variables: the clients
// get their credentials and endpoints from the scripts only.
func withoutAWSEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// urlEnv is urls as NAME=URL variables.
func urlEnv(urls map[string]string) []string {
	var env []string
	for k, v := range urls {
		env = append(env, k+"="+v)
	}
	return env
}

// checkRequests checks, for each mock of urls (by variable name), the
// requests it saw by API and status (requestsByAPI) against want's.
func checkRequests(t *testing.T, urls, want map[string]string) {
	t.Helper()
	for k, base := range urls {
		ok, failed := requestsByAPI(t, base)
		if got := fmt.Sprint(ok, " ", failed); got != want[k] {
			t.Errorf("%s: requests by status %s, want %s", k, got, want[k])
		}
	}
}

// requestsByAPI reads mockllm_requests_total from the mock's /metrics:
// successful requests by API, and the others by API and status.
func requestsByAPI(t *testing.T, base string) (ok, failed map[string]int) {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	ok, failed = map[string]int{}, map[string]int{}
	label := func(line, name string) string {
		_, v, _ := strings.Cut(line, name+`="`)
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "mockllm_requests_total{") {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		api, status := label(line, "api"), label(line, "status")
		if status == "200" {
			ok[api] += int(n)
		} else {
			failed[api+" "+status] += int(n)
		}
	}
	return ok, failed
}

// checkOKLines checks that out has an "ok NAME" line for each of want: the
// scripts print one per check that passed.
func checkOKLines(t *testing.T, out string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, "\nok "+w) && !strings.HasPrefix(out, "ok "+w) {
			t.Errorf("no %q line: the check did not run", "ok "+w)
		}
	}
}
