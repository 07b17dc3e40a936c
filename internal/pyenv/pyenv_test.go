package pyenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "python", "requirements.lock")); err != nil {
		t.Fatalf("Root() = %s, which has no python/requirements.lock: %v", root, err)
	}
}

// TestPythonHasTheLock checks that the venv's interpreter runs and has the
// lock's pinned SDK versions installed.
func TestPythonHasTheLock(t *testing.T) {
	py := Python(t)
	root, _ := Root()
	lock, err := os.ReadFile(filepath.Join(root, "python", "requirements.lock"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-m", "pip", "freeze", "--disable-pip-version-check").Output()
	if err != nil {
		t.Fatalf("%s -m pip freeze: %v", py, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		have[strings.ToLower(strings.TrimSpace(l))] = true
	}
	for _, l := range strings.Split(string(lock), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !have[strings.ToLower(l)] {
			t.Errorf("the venv lacks %s from python/requirements.lock: run make py-deps", l)
		}
	}
}
