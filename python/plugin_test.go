package python

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ratelab/ratelab/internal/pyenv"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// mockllmBinary builds cmd/mockllm once for the package's tests and returns
// its path.
func mockllmBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "ratelab-python-")
		if buildErr != nil {
			return
		}
		root, err := pyenv.Root()
		if err != nil {
			buildErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "mockllm"), "./cmd/mockllm")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/mockllm: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(buildDir, "mockllm")
}

// pytestSummary is pytest's last line: "21 passed in 20.83s",
// "1 failed, 20 passed in ...".
var pytestSummary = regexp.MustCompile(`(?m)^=*\s*(.*\d+ (passed|failed|error|errors|skipped).*) in [\d.]+s`)

// TestPlugin runs the pytest plugin's own tests (python/tests) with the
// venv's interpreter against a freshly built mockllm. Any exit but 0 fails,
// "no tests ran" (5) included, with pytest's output; so does a run in which
// a test was skipped (every test here needs the binary it is given).
func TestPlugin(t *testing.T) {
	py := pyenv.Python(t)
	bin := mockllmBinary(t)
	root, _ := pyenv.Root()
	cmd := exec.Command(py, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "python/tests")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "MOCKLLM_BIN="+bin, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest python/tests: %v (exit code 5 means no tests ran)\n%s", err, out)
	}
	m := pytestSummary.FindSubmatch(out)
	if m == nil {
		t.Fatalf("pytest python/tests printed no summary line:\n%s", out)
	}
	summary := strings.Trim(string(m[1]), "= ")
	if strings.Contains(summary, "skipped") || !strings.Contains(summary, "passed") {
		t.Fatalf("pytest python/tests: %s; every test must run and pass:\n%s", summary, out)
	}
	t.Logf("pytest python/tests: %s", summary)
}
