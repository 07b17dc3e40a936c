// Package buildinfo formats what debug.ReadBuildInfo knows about the
// running binary, for the --version flag of ratelab's commands.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// String returns the version line of the command name: the main module's
// version and the VCS revision it was built from, e.g.
//
//	mockllm v0.3.0 (revision 8ea6836c0e1f, go1.26.0)
//	mockllm (devel) (revision 8ea6836c0e1f+modified, go1.26.0)
//
// The revision is "unknown" when the build recorded none (go run, or
// -buildvcs=false).
func String(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("%s (devel) (revision unknown, unknown go)", name)
	}
	return Format(name, bi)
}

// Format is String for the build information bi.
func Format(name string, bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	rev, modified := "unknown", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
			if len(rev) > 12 {
				rev = rev[:12]
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified {
		rev += "+modified"
	}
	goVersion := bi.GoVersion
	if goVersion == "" {
		goVersion = "unknown go"
	}
	return fmt.Sprintf("%s %s (revision %s, %s)", name, version, rev, goVersion)
}
