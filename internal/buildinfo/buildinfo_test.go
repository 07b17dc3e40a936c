package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "8ea6836c0e1f2a3b4c5d"}, {Key: "vcs.modified", Value: "false"}}},
			"mockllm v0.3.0 (revision 8ea6836c0e1f, go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"mockllm (devel) (revision abc+modified, go1.26.0)"},
		{debug.BuildInfo{GoVersion: "go1.26.0"}, "mockllm (devel) (revision unknown, go1.26.0)"},
	} {
		if got := Format("mockllm", &tt.bi); got != tt.want {
			t.Errorf("Format(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
}

func TestString(t *testing.T) {
	if got := String("loadgen"); !strings.HasPrefix(got, "loadgen ") || !strings.Contains(got, "(revision ") {
		t.Errorf("String = %q, want loadgen VERSION (revision REV, GO)", got)
	}
}
