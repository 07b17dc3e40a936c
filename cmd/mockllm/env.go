package main

import (
	"flag"
	"fmt"
	"strings"
)

// envPrefix starts the environment variable of every flag: --max-concurrent
// is MOCKLLM_MAX_CONCURRENT.
const envPrefix = "MOCKLLM_"

// noEnv are the flags no variable sets: a MOCKLLM_VERSION left in a
// container's environment must not turn the server into a version printer.
var noEnv = map[string]bool{"version": true}

// envName is the environment variable of the flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// setFromEnv sets every flag of fs that the command line left unset from
// its environment variable, when that is set and not empty: flags win over
// the environment, and Apply puts both over the config file. A repeatable
// flag (--api-key) takes a comma-separated list. A bad value is an error
// naming the variable.
//
// Hand-written rather than peterbourgon/ff: ff's environment pass is the
// same VisitAll loop, but it reads only os.Getenv (lookup here is
// injectable), wraps every error in "error parsing ..." and comes with a
// config-file format of its own that mockllm's YAML would compete with.
func setFromEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || noEnv[f.Name] {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok || v == "" {
			return
		}
		values := []string{v}
		if isList(f) {
			values = strings.Split(v, ",")
		}
		for _, one := range values {
			if one = strings.TrimSpace(one); one == "" {
				continue // "k1,,k2" or a trailing comma: no empty key
			}
			if e := fs.Set(f.Name, one); e != nil {
				err = fmt.Errorf("environment variable %s: invalid value %q for --%s: %v", name, v, f.Name, e)
				return
			}
		}
	})
	return err
}

// isList reports whether f is a repeatable flag: each Set appends.
func isList(f *flag.Flag) bool { return f.Name == "api-key" }

// envUsage lists the environment variables of fs's flags for --help.
func envUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("\nEnvironment: every flag but --version can be set by a variable named after it\n" +
		"(flags win over the variable, the variable over the config file; empty = unset;\n" +
		envName("api-key") + " takes a comma-separated list):\n\n")
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !noEnv[f.Name] {
			names = append(names, fmt.Sprintf("  %-32s --%s", envName(f.Name), f.Name))
		}
	})
	b.WriteString(strings.Join(names, "\n"))
	b.WriteString("\n")
	return b.String()
}
