package python

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/pyenv"
)

// The SDKs' own generated API tests (tests/api_resources of the anthropic
// and openai sdists that make py-deps downloads into .venv/sdists/) against
// mockllm. They were written for a Prism mock at TEST_API_BASE_URL; here
// that is a mockllm started with sdkConfig. docs/sdk-tests.md has the table
// of every endpoint (RATELAB_SDK_TESTS=all runs every test file and prints
// it).

// sdkConfig lets the tests' placeholder model ids ("model_id", "claude-1.3")
// through and produces tokens without waiting (max_tokens 1024 at the
// default 5 ms a token is 5 s a test).
const sdkConfig = "models: any\nlatency: {per_token: 0s}\n"

type sdkSuite struct {
	name   string   // the package in requirements.lock
	suffix string   // TEST_API_BASE_URL is the server's root + suffix
	files  []string // the test files of the endpoints mockllm serves
	served []string // those endpoints (resource.method)
	// refusals are the tests of served endpoints that fail because their
	// generated arguments are ones the real API refuses too: endpoint ->
	// the substring of mockllm's 400 that every failure must carry.
	refusals map[string][]string
}

var sdkSuites = []sdkSuite{
	{
		name:  "anthropic",
		files: []string{"tests/api_resources/test_messages.py", "tests/api_resources/test_models.py", "tests/api_resources/beta/test_messages.py", "tests/api_resources/beta/test_models.py"},
		served: []string{
			"messages.create", "messages.count_tokens", "models.list", "models.retrieve",
			"beta.messages.create", "beta.messages.count_tokens", "beta.models.list", "beta.models.retrieve",
		},
		refusals: map[string][]string{
			// with_all_params sends tools[0].input_schema.properties
			// {"location": "bar"}: not a JSON Schema.
			"messages.create":      {"tools.0.input_schema: invalid schema"},
			"beta.messages.create": {"tools.0.input_schema: invalid schema"},
		},
	},
	{
		name:   "openai",
		suffix: "/v1",
		files:  []string{"tests/api_resources/chat/test_completions.py", "tests/api_resources/test_models.py", "tests/api_resources/test_responses.py"},
		served: []string{"chat.completions.create", "models.list", "models.retrieve", "responses.create"},
		refusals: map[string][]string{
			// with_all_params sends max_tokens=0.
			"chat.completions.create": {"max_tokens: must be at least 1, got 0"},
			// create() without a model; with_all_params names a
			// previous_response_id the server never issued.
			"responses.create": {"model: field required", `Previous response with id "previous_response_id" not found`},
		},
	},
}

// testName is a generated test's name: test_method_create_with_all_params_overload_1.
var testName = regexp.MustCompile(`^test_(?:method|raw_response|streaming_response|path_params)_(.+?)(?:_with_all_params)?(?:_overload_\d+)?$`)

// endpointOf names the endpoint a test case exercises: the resource from
// the file's path under tests/api_resources, the method from the test's
// name.
func endpointOf(classname, name string) string {
	mod := strings.TrimPrefix(classname, "tests.api_resources.")
	if i := strings.LastIndex(mod, "."); i >= 0 {
		mod = mod[:i] // the class
	}
	parts := strings.Split(mod, ".")
	parts[len(parts)-1] = strings.TrimPrefix(parts[len(parts)-1], "test_")
	name, _, _ = strings.Cut(name, "[")
	method := name
	if m := testName.FindStringSubmatch(name); m != nil {
		method = m[1]
	} else if name == "test_deprecated_model_warning" {
		method = "create"
	}
	return strings.Join(parts, ".") + "." + method
}

type caseResult struct {
	endpoint, id, failure string // failure: "" when it passed
	skipped               bool
}

type junitCase struct {
	Classname string `xml:"classname,attr"`
	Name      string `xml:"name,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

func readJUnit(t *testing.T, path string) []caseResult {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []caseResult
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			r := caseResult{endpoint: endpointOf(c.Classname, c.Name), id: c.Classname + "::" + c.Name, skipped: c.Skipped != nil}
			switch {
			case c.Failure != nil:
				r.failure = "failed: " + c.Failure.Message
			case c.Error != nil:
				r.failure = "error: " + c.Error.Message
			}
			out = append(out, r)
		}
	}
	return out
}

// sdist extracts the sdist of the lock's version of pkg from .venv/sdists
// into a temporary directory and returns the directory holding its tests/.
func sdist(t *testing.T, pkg string) (dir, version string) {
	t.Helper()
	root, _ := pyenv.Root()
	lock, err := os.ReadFile(filepath.Join(root, "python", "requirements.lock"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(lock), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), pkg+"=="); ok {
			version = v
		}
	}
	if version == "" {
		t.Fatalf("python/requirements.lock pins no %s", pkg)
	}
	path := filepath.Join(root, ".venv", "sdists", pkg+"-"+version+".tar.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v: run make py-deps (it downloads the SDKs' sdists)", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dest := t.TempDir()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		_, rel, _ := strings.Cut(h.Name, "/")
		if h.Typeflag != tar.TypeReg || !(strings.HasPrefix(rel, "tests/") || rel == "pyproject.toml") || strings.Contains(rel, "..") {
			continue
		}
		out := filepath.Join(dest, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	if _, err := os.Stat(filepath.Join(dest, "tests", "api_resources")); err != nil {
		t.Fatalf("%s has no tests/api_resources: %v", path, err)
	}
	return dest, version
}

// startMockllm runs bin with the config and returns its URL.
func startMockllm(t *testing.T, bin, config string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "mockllm.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--config", cfg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Scan()
		line <- sc.Text()
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		url, ok := strings.CutPrefix(l, "listening on ")
		if !ok {
			t.Fatalf("mockllm's first line is %q", l)
		}
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("mockllm printed no address in 30 s")
	}
	return ""
}

// runSDKTests runs files (relative to the sdist) with pytest against url
// and returns the results.
func runSDKTests(t *testing.T, py, dir, url string, files []string) []caseResult {
	t.Helper()
	xmlPath := filepath.Join(t.TempDir(), "junit.xml")
	args := append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--junitxml", xmlPath}, files...)
	cmd := exec.Command(py, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TEST_API_BASE_URL="+url, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("pytest: %v", err)
		}
		code = ee.ExitCode()
	}
	// 1 is "some tests failed", judged per endpoint below; anything else
	// (no tests, a usage or collection error, an interrupt) is this test's failure.
	if code != 0 && code != 1 {
		t.Fatalf("pytest %s exited %d:\n%s", strings.Join(files, " "), code, out)
	}
	res := readJUnit(t, xmlPath)
	if len(res) == 0 {
		t.Fatalf("pytest ran no tests:\n%s", out)
	}
	return res
}

type tally struct{ passed, failed, skipped int }

func tallies(res []caseResult) (map[string]*tally, []string) {
	m := map[string]*tally{}
	var names []string
	for _, r := range res {
		c := m[r.endpoint]
		if c == nil {
			c = &tally{}
			m[r.endpoint] = c
			names = append(names, r.endpoint)
		}
		switch {
		case r.skipped:
			c.skipped++
		case r.failure == "":
			c.passed++
		default:
			c.failed++
		}
	}
	slices.Sort(names)
	return m, names
}

// TestSDKAPITests runs the generated tests of the endpoints mockllm serves
// and holds every one passing, but the tests whose arguments the real API
// refuses too: those must fail with exactly that refusal (each is seen at
// least once, so a mock that starts accepting them is noticed).
func TestSDKAPITests(t *testing.T) {
	py := pyenv.Python(t)
	bin := mockllmBinary(t)
	all := os.Getenv("RATELAB_SDK_TESTS") == "all"
	var table strings.Builder
	for _, s := range sdkSuites {
		t.Run(s.name, func(t *testing.T) {
			dir, version := sdist(t, s.name)
			url := startMockllm(t, bin, sdkConfig)
			files := s.files
			if all {
				files = []string{"tests/api_resources"}
			}
			res := runSDKTests(t, py, dir, url+s.suffix, files)
			seen := map[string]bool{}
			for _, r := range res {
				if !slices.Contains(s.served, r.endpoint) {
					continue
				}
				if r.skipped {
					t.Errorf("%s (%s, served) was skipped", r.id, r.endpoint)
					continue
				}
				if r.failure == "" {
					continue
				}
				ok := false
				for _, want := range s.refusals[r.endpoint] {
					if strings.Contains(r.failure, want) && strings.Contains(r.failure, "400") {
						ok, seen[r.endpoint+"\x00"+want] = true, true
					}
				}
				if !ok {
					t.Errorf("%s (%s, served by mockllm) %s", r.id, r.endpoint, r.failure)
				}
			}
			counts, names := tallies(res)
			for _, ep := range s.served {
				c := counts[ep]
				if c == nil || c.passed+c.failed == 0 {
					t.Errorf("no test of %s (served) ran", ep)
					continue
				}
				for _, want := range s.refusals[ep] {
					if !seen[ep+"\x00"+want] {
						t.Errorf("%s: no test was refused with %q any more: update the refusals (and docs/sdk-tests.md)", ep, want)
					}
				}
			}
			fmt.Fprintf(&table, "\n### %s %s (%d tests)\n\n| endpoint | served | passed | refused (400, as the API would) | failed | skipped |\n|---|---|---|---|---|---|\n", s.name, version, len(res))
			var unserved []string
			for _, ep := range names {
				c := counts[ep]
				if !slices.Contains(s.served, ep) {
					unserved = append(unserved, fmt.Sprintf("%s %d/%d", ep, c.passed, c.passed+c.failed+c.skipped))
					continue
				}
				refused := c.failed // every failure of a served endpoint was checked above to be a refusal
				fmt.Fprintf(&table, "| `%s` | yes | %d | %d | 0 | %d |\n", ep, c.passed, refused, c.skipped)
			}
			if len(unserved) > 0 {
				fmt.Fprintf(&table, "\nNot served (404; passed/ran, the passes are the tests that check arguments client-side before any request): %s.\n", strings.Join(unserved, ", "))
			}
		})
	}
	t.Logf("per-endpoint results:\n%s", table.String())
}
