package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestProgressTo: run and batch always report progress on stderr, live
// only on a terminal: a buffer or a file (a CI log) gets plain lines at
// the default interval (loadgen's TestProgressPlain checks their content).
func TestProgressTo(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "ci.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	for name, w := range map[string]io.Writer{"buffer": &buf, "file": f} {
		p := progressTo(w)
		if p == nil || p.W != w || p.Live || p.Every != 0 {
			t.Errorf("%s: progressTo = %+v, want plain lines to it at the default interval", name, p)
		}
	}
	// A terminal is a character device, as /dev/null is (where a live
	// line costs nothing).
	dev, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if p := progressTo(dev); !p.Live {
		t.Errorf("%s: progressTo = %+v, want a live line", os.DevNull, p)
	}
}
