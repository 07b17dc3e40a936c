// Package pyenv gives ratelab's tests the project-local Python venv that make
// py-deps creates (.venv/ at the repository's root, from
// python/requirements.lock): its interpreter, or a skip that says how to make
// it.
//
// Under CI a missing venv fails the test, so a CI run can never skip the
// Python client tests silently.
package pyenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Root returns the repository's root: the nearest directory at or above the
// working directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod at or above the working directory")
		}
		dir = up
	}
}

// Python returns the absolute path of the venv's interpreter. Without the
// venv the test fails when CI is set and is skipped elsewhere, with the
// command that makes it.
func Python(t testing.TB) string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatalf("pyenv: %v", err)
	}
	py := filepath.Join(root, ".venv", "bin", "python")
	if _, err := os.Stat(filepath.Join(root, ".venv", ".installed")); err != nil {
		msg := "no Python venv at " + filepath.Join(root, ".venv") + ": run make py-deps (it installs python/requirements.lock)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}
